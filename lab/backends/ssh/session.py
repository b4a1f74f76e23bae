"""What one run puts on its hosts, and how it is all taken away again.

Each run (a "session") gets `<dir>/lab-<session>/` on every host (`dir` from the hosts file):

    bin/run-node         the wrapper each node runs under (lab.backends.ssh.node)
    ship/<name>/         what the target needs from the lab's machine (broker_ref and its
                         Python packages, Broker-J's distribution), unpacked
    nodes/<node>/        configuration, data, broker.log, stderr.log, node.pid, node.status,
                         the pids it ran as (pids), its clock's file (faketime)
    netem.iface          the interface that has the lab's queueing discipline, if any

and its packet-filter rules carry the comment `lab-hosts:<session>`. `CLEANUP` (a shell
script sent over SSH: nothing on the host is trusted to remove itself) kills the session's
node processes (each pid checked to still be one of the session's by its command line), deletes
its rules and its queueing discipline, libfaketime's shared-memory files of its processes, and
the folder. Teardown runs it in `finally`; before touching a host the run writes a record
(lab.backends.ssh.registry) naming the hosts and folders, so that when the lab is killed with
SIGKILL the next `lab` command runs it instead (`reap_host_sessions`).
"""

from __future__ import annotations

import itertools
import os
import re
import secrets
import shlex
from dataclasses import dataclass
from typing import Any

from lab.backends.ssh.connection import Done, probe
from lab.backends.ssh.hosts_file import Host, Inventory
from lab.backends.ssh.registry import HOST_SESSIONS
from lab.ground.errors import ClusterError

__all__ = ["CLEANUP", "SESSIONS", "HostSession", "cleanup_command", "reap_host_sessions"]

SESSIONS = HOST_SESSIONS
NETEM_HANDLE = "1ab:"
_SERIAL = itertools.count(1)
_ROOT = re.compile(r"^/[A-Za-z0-9_./-]+/lab-\d+\.\d+\.[0-9a-f]{6}$")

CLEANUP = r"""
root=$1; tag=$2; sudo=$3
case "$root" in */lab-*) ;; *) echo "not a session folder: $root" >&2; exit 2 ;; esac
ours() { [ -r "/proc/$1/cmdline" ] && tr '\0' ' ' < "/proc/$1/cmdline" | grep -qF "$root/"; }
for list in "$root"/nodes/*/pids; do
  [ -f "$list" ] || continue
  for pid in $(cat "$list"); do
    if ours "$pid"; then kill -KILL "$pid" 2>/dev/null; fi
    rm -f "/dev/shm/faketime_shm_$pid" "/dev/shm/sem.faketime_sem_$pid"
  done
done
for pid in $(ls /proc | grep -E '^[0-9]+$'); do
  if ours "$pid"; then kill -KILL "$pid" 2>/dev/null; fi
done
if command -v iptables >/dev/null 2>&1; then
  for table in filter mangle; do
    $sudo iptables -w -t $table -S 2>/dev/null | grep -F -- "--comment $tag " | \
    while read -r line; do
      eval "$sudo iptables -w -t $table -D ${line#-A }" || true
    done
    $sudo iptables -w -t $table -S 2>/dev/null | grep -F -- "--comment \"$tag\"" | \
    while read -r line; do
      eval "$sudo iptables -w -t $table -D ${line#-A }" || true
    done
  done
fi
if [ -f "$root/netem.iface" ]; then
  iface=$(cat "$root/netem.iface")
  if $sudo tc qdisc show dev "$iface" 2>/dev/null | grep -q "qdisc prio 1ab: root"; then
    $sudo tc qdisc del dev "$iface" root || true
  fi
fi
rm -rf "$root"
left=""
[ -e "$root" ] && left="$left folder"
if command -v iptables >/dev/null 2>&1 && $sudo iptables -w -S 2>/dev/null | grep -qF "$tag"; then
  left="$left rules"
fi
[ -z "$left" ] || { echo "left on the host:$left" >&2; exit 1; }
"""


def cleanup_command(root: str, tag: str, host: Host) -> str:
    if not _ROOT.match(root):
        raise ClusterError(f"not a session folder: {root!r}")
    args = shlex.join([root, tag, host.privileged.strip()])
    return f"sh -c {shlex.quote(CLEANUP)} cleanup {args}"


@dataclass(frozen=True)
class HostSession:
    """One run's name on its hosts."""

    id: str

    @staticmethod
    def new() -> HostSession:
        return HostSession(f"{os.getpid()}.{next(_SERIAL)}.{secrets.token_hex(3)}")

    @property
    def tag(self) -> str:
        """The comment on every packet-filter rule of the session."""
        return f"lab-hosts:{self.id}"

    def root(self, host: Host) -> str:
        return f"{host.dir}/lab-{self.id}"

    def record(self, inventory: Inventory, hosts: list[Host], detached: bool) -> None:
        """Say, before anything is put on a host, where the session puts it."""
        SESSIONS.write(
            self.id,
            {
                "hosts_file": str(inventory.source),
                "rig": inventory.rig,
                "tag": self.tag,
                "hosts": [_host_json(h, self.root(h)) for h in hosts],
            },
            owned=not detached,
        )

    def forget(self) -> None:
        record = SESSIONS.read(self.id)
        if record is not None:
            record.remove()


def _host_json(host: Host, root: str) -> dict[str, Any]:
    return {
        "name": host.name,
        "address": host.address,
        "port": host.port,
        "user": host.user,
        "key": str(host.key),
        "known_hosts": str(host.known_hosts),
        "dir": host.dir,
        "node": host.node,
        "python": host.python,
        "root": root,
    }


def _host_from(raw: dict[str, Any]) -> tuple[Host, str]:
    from pathlib import Path

    host = Host(
        name=str(raw["name"]),
        address=str(raw["address"]),
        node=str(raw["node"]),
        port=int(raw["port"]),
        user=str(raw["user"]),
        key=Path(str(raw["key"])),
        known_hosts=Path(str(raw["known_hosts"])),
        dir=str(raw["dir"]),
        python=str(raw["python"]),
    )
    return host, str(raw["root"])


def clean_session(body: dict[str, Any]) -> list[str]:
    """Run CLEANUP on every host of a session record; the problems, one line each."""
    problems: list[str] = []
    for raw in body.get("hosts", []):
        try:
            host, root = _host_from(raw)
            done: Done = probe(host, cleanup_command(root, str(body["tag"]), host))
        except (ClusterError, KeyError, ValueError, TypeError) as exc:
            problems.append(str(exc))
            continue
        if done.status != 0:
            problems.append(f"host {host.name}: {(done.stderr or done.stdout).strip()}")
    return problems


def reap_host_sessions() -> list[str]:
    """Clean the hosts of every session whose lab process is gone; what was cleaned. A
    session whose hosts were a namespace rig that is gone is gone with it. Raises a
    ClusterError naming what could not be reached (the next command tries again)."""
    from lab.backends.ssh.rig import RIGS

    cleaned: list[str] = []
    problems: list[str] = []
    for record in SESSIONS.records():
        if not record.orphaned:
            continue
        rig = record.body.get("rig")
        if isinstance(rig, str) and RIGS.read(rig) is None:
            record.remove()
            cleaned.append(f"session {record.path.stem} (its rig is gone)")
            continue
        left = clean_session(record.body)
        if left:
            problems.extend(f"session {record.path.stem}: {p}" for p in left)
        else:
            record.remove()
            cleaned.append(f"session {record.path.stem} on its hosts")
    if problems:
        raise ClusterError("; ".join(problems))
    return cleaned
