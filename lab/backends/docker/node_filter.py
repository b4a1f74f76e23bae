"""Cutting one node→node link inside a node's network namespace (packet filtering).

For targets whose nodes reach each other at the address they advertise to the group
(Broker-J: Berkeley DB JE records one address per node), a per-pair proxy cannot sit
on the link. In containers the lab cuts such a link where it starts: in the source
node's network namespace (entered from the host with nsenter, so the image needs no
tools and no capabilities), it drops packets to and from the peer's address:

    iptables -I OUTPUT -d <peer> -m comment --comment lab-cut -j DROP
    iptables -I INPUT  -s <peer> -m comment --comment lab-cut -j DROP

Dropped, not refused: a partitioned peer goes silent, as behind a broken switch. A
rule is added only when absent and removed while present, so cut and heal are
idempotent. The rules live in the container's namespace and end with it.
"""

from __future__ import annotations

import shutil
import subprocess

from lab.ground.errors import ClusterError, SetupError

__all__ = ["COMMENT", "block", "is_blocked", "unblock"]

COMMENT = "lab-cut"


def _rules(peer: str) -> tuple[list[str], list[str]]:
    tag = ["-m", "comment", "--comment", COMMENT, "-j", "DROP"]
    return ["OUTPUT", "-d", peer, *tag], ["INPUT", "-s", peer, *tag]


def _iptables(pid: int, action: str, rule: list[str]) -> subprocess.CompletedProcess[str]:
    for tool in ("nsenter", "iptables"):
        if shutil.which(tool) is None:
            raise SetupError(f"cutting a node→node link in a container needs {tool} on the host")
    command = ["nsenter", "-t", str(pid), "-n", "iptables", "-w", action, *rule]
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=15, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ClusterError(f"{' '.join(command)}: {exc}") from exc


def _present(pid: int, rule: list[str]) -> bool:
    return _iptables(pid, "-C", rule).returncode == 0


def block(pid: int, peer: str) -> None:
    """Drop every packet between the node (its main process `pid`) and `peer`."""
    for rule in _rules(peer):
        if not _present(pid, rule):
            done = _iptables(pid, "-I", rule)
            if done.returncode != 0:
                raise ClusterError(f"cannot cut the link to {peer}: {done.stderr.strip()}")


def unblock(pid: int, peer: str) -> None:
    """Undo `block`; nothing to do when there is no such rule."""
    for rule in _rules(peer):
        while _present(pid, rule):
            done = _iptables(pid, "-D", rule)
            if done.returncode != 0:
                raise ClusterError(f"cannot heal the link to {peer}: {done.stderr.strip()}")


def is_blocked(pid: int, peer: str) -> bool:
    return all(_present(pid, rule) for rule in _rules(peer))
