"""A namespace rig kept between commands, for a person trying `--backend ssh` on one machine:
`lab rig up` makes it and prints its hosts file, `lab rig down` takes it all away.

    up = kept_rig_up(state_dir, hosts=3)   the rig of `state_dir` (made now, or the one up)
    up.hosts_file, up.made                 its hosts file; whether this call made it
    kept_rig_down(state_dir)               its namespaces, processes, links, rule, keys
                                           removed; False when there was none

One rig per state folder (`.lab/` by default, as `lab up`'s cluster): made once, and a second
`up` finds it whole and says so (a rig found broken, its sshd gone after a reboot, is removed
and made again). It outlives the command: its sshd processes are detached and its record
(lab.backends.ssh.registry) has no owner, so no `lab` command's reaper takes it; `down` does,
by that record, whichever process asks. As root only (lab.backends.ssh.rig.rig_refusal).
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from lab.backends.ssh.registry import Record
from lab.backends.ssh.rig import RIGS, Rig, rig_refusal
from lab.backends.ssh.rig_teardown import remove_rig
from lab.ground.errors import ClusterError, SetupError, UsageError

__all__ = ["MAX_HOSTS", "KeptRig", "check_hosts", "kept_rig_down", "kept_rig_up"]

MAX_HOSTS = 9
Say = Callable[[str], None]


@dataclass(frozen=True)
class KeptRig:
    hosts_file: Path
    hosts: int
    made: bool  # False: it was up already


def _record_of(state_dir: Path) -> Record | None:
    """The record of the rig kept for `state_dir`, if there is one."""
    key = str(state_dir.resolve())
    return next((r for r in RIGS.records() if r.body.get("kept") == key), None)


def _whole(record: Record) -> bool:
    """Its namespaces are there, its hosts file too, and every host's sshd answers."""
    body = record.body
    stage = body.get("stage")
    if not isinstance(stage, str) or not stage:
        return False
    hosts_file = Path(stage) / "hosts.toml"
    if not hosts_file.is_file():
        return False
    if not all(Path("/run/netns", str(ns)).exists() for ns in body.get("netns") or []):
        return False
    return all(_answers(address) for address in _addresses(hosts_file))


def _addresses(hosts_file: Path) -> list[str]:
    import tomllib

    with contextlib.suppress(OSError, ValueError):
        raw = tomllib.loads(hosts_file.read_text(encoding="utf-8"))
        return [str(h.get("address")) for h in raw.get("host") or []]
    return []


def _answers(address: str) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((address, 22), 1.0):
        return True
    return False


def _remove(record: Record) -> None:
    problems = remove_rig(record.body, record.path.stem)
    if problems:
        raise ClusterError(f"rig {record.path.stem}: " + "; ".join(problems))
    record.remove()


def check_hosts(hosts: int) -> None:
    """A UsageError for a number of hosts the rig cannot have."""
    if not 1 <= hosts <= MAX_HOSTS:
        raise UsageError(f"--hosts {hosts}: a rig has 1 to {MAX_HOSTS} hosts")


def kept_rig_up(state_dir: Path, hosts: int | None, say: Say) -> KeptRig:
    """The rig kept for `state_dir`: the one up already (refused when `hosts` asks for
    another size), or a new one of `hosts` hosts (default 3)."""
    if hosts is not None:
        check_hosts(hosts)
    refusal = rig_refusal()
    if refusal is not None:
        raise SetupError(f"lab rig up: {refusal}: run it as root")
    found = _record_of(state_dir)
    if found is not None:
        size = int(found.body.get("hosts") or len(found.body.get("netns") or []))
        hosts_file = Path(str(found.body.get("stage"))) / "hosts.toml"
        if _whole(found):
            if hosts is not None and hosts != size:
                raise UsageError(
                    f"a rig of {size} hosts is up ({hosts_file}): "
                    f"`lab rig down` first to make one of {hosts}"
                )
            return KeptRig(hosts_file, size, made=False)
        say(f"rig {found.path.stem} is not whole (its sshd or namespaces are gone): made anew")
        _remove(found)
        hosts = hosts or size
    state_dir.mkdir(parents=True, exist_ok=True)
    rig = Rig(hosts or 3, state_dir, say=say, kept=str(state_dir.resolve()))
    return KeptRig(rig.up(), rig.count, made=True)


def kept_rig_down(state_dir: Path) -> str | None:
    """Remove the rig kept for `state_dir` (every process in its namespaces, the
    namespaces, veths, bridge, forwarding rule, keys and hosts file, its record); its tag,
    or None when there was none. Refused, in one line, without root."""
    refusal = rig_refusal()
    if refusal is not None:
        raise SetupError(f"lab rig down: {refusal}: run it as root")
    found = _record_of(state_dir)
    if found is None:
        return None
    _remove(found)
    with contextlib.suppress(OSError):
        state_dir.rmdir()  # the state folder `up` made, when nothing else is in it
    return found.path.stem
