"""Cutting node→node links between local processes: each node on its own loopback address.

Broker-J's nodes reach each other at the one address each advertises to the group
(Berkeley DB JE records one per node), so no per-pair proxy can sit between two of them.
On local processes, as root, the lab gives each such node its own address in 127.0.0.0/8
(all of it is the host's loopback; the address is made from the node's replication
port, so concurrent runs never share one) and cuts a pair with packet-filter rules
matching the two addresses:

  - each node runs in a cgroup of its own (cgroup v2), and its outgoing connections
    leave from its own address:
        iptables -t nat -A POSTROUTING -m cgroup --path <its cgroup> -j SNAT --to <address>
  - a cut drops every packet between the pair, both ways, before connection tracking
    (so replies are matched by the addresses they carry on the wire):
        iptables -t raw -I PREROUTING -s <a> -d <b> -j DROP      and b to a

Dropped, not refused: a partitioned peer goes silent, as behind a broken switch (as in
containers, lab.backends.docker.node_filter). Clients, management and Toxiproxy keep using
127.0.0.1. Every rule carries the comment `lab-peers:<pid>.<k>` and every cgroup sits
under `lab-peers/<pid>.<k>`, <pid> the lab process that made them: teardown removes its
own, and a lab killed with SIGKILL leaves them to the next `lab` command (`reap_peer_filters`).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from lab.ground.children import process_alive
from lab.ground.errors import ClusterError

__all__ = [
    "NOT_ROOT",
    "PREFIX",
    "PeerFilter",
    "node_address",
    "peer_filter_refusal",
    "reap_peer_filters",
]

PREFIX = "lab-peers"
NOT_ROOT = (
    "on local processes they can be cut only as root (each node on its own loopback address, "
    "cut by a packet filter); run as root or use --backend docker"
)
_SERIAL = itertools.count(1)
_CHAINS = (("raw", "PREROUTING"), ("nat", "POSTROUTING"))
_COMMENT = re.compile(r"--comment \"?" + PREFIX + r":(\d+)\.(\d+)\"?")


def node_address(replication_port: int) -> str:
    """The node's own loopback address: 127.77.<port / 256>.<port % 256>."""
    if not 0 < replication_port < 65536:
        raise ValueError(f"not a port: {replication_port}")
    return f"127.77.{replication_port >> 8}.{replication_port & 0xFF}"


def cgroup2_root() -> Path | None:
    """Where the unified (v2) cgroup hierarchy is mounted; None when it is not."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mounts").read_text().splitlines():
            fields = line.split()
            if len(fields) >= 3 and fields[2] == "cgroup2":
                return Path(fields[1].replace("\\040", " "))
    return None


def peer_filter_refusal() -> str | None:
    """Why this process cannot cut node→node links between local processes (one line);
    None when it can."""
    if os.geteuid() != 0:
        return NOT_ROOT
    if shutil.which("iptables") is None:
        return "cutting them on local processes needs iptables (apt-get install iptables)"
    root = cgroup2_root()
    if root is None or not os.access(root, os.W_OK):
        return "cutting them on local processes needs a writable cgroup v2 hierarchy"
    return None


def _iptables(table: str, *args: str) -> subprocess.CompletedProcess[str]:
    command = ["iptables", "-w", "-t", table, *args]
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=15, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ClusterError(f"{' '.join(command)}: {exc}") from exc


def _must(table: str, *args: str) -> None:
    done = _iptables(table, *args)
    if done.returncode != 0:
        raise ClusterError(f"iptables -t {table} {' '.join(args)}: {done.stderr.strip()}")


@dataclass(frozen=True)
class _Rule:
    table: str
    chain: str
    spec: tuple[str, ...]

    def present(self) -> bool:
        return _iptables(self.table, "-C", self.chain, *self.spec).returncode == 0

    def apply(self, action: str) -> None:
        """-A, -I or -D this rule; a ClusterError when iptables refuses."""
        _must(self.table, action, self.chain, *self.spec)


class PeerFilter:
    """One cluster's node addresses, cgroups and packet-filter rules."""

    def __init__(self) -> None:
        self.owner = (os.getpid(), next(_SERIAL))
        mark = f"{self.owner[0]}.{self.owner[1]}"
        self.label = f"{PREFIX}:{mark}"  # every rule's comment
        root = cgroup2_root()
        if root is None:
            raise ClusterError("no cgroup v2 hierarchy is mounted")
        self.relative = f"{PREFIX}/{mark}"  # the cluster's cgroup, under the hierarchy's root
        self.base = root / self.relative
        self.addresses: dict[str, str] = {}

    def _tag(self) -> tuple[str, ...]:
        return ("-m", "comment", "--comment", self.label)

    def cgroup(self, node: str) -> Path:
        return self.base / node

    def add_node(self, node: str, address: str) -> None:
        """The node's cgroup, and its outgoing connections leaving from `address`."""
        for attempt in range(3):  # another lab may remove the empty shared folder meanwhile
            try:
                self.cgroup(node).mkdir(parents=True, exist_ok=True)
                break
            except FileNotFoundError:
                if attempt == 2:
                    raise
        self.addresses[node] = address
        rule = self._snat(node)
        if not rule.present():
            rule.apply("-A")

    def _snat(self, node: str) -> _Rule:
        cgroup = f"{self.relative}/{node}"
        spec = ("-m", "cgroup", "--path", cgroup, "-p", "tcp", "-d", "127.0.0.0/8")
        to = ("-j", "SNAT", "--to-source", self.addresses[node])
        return _Rule("nat", "POSTROUTING", (*spec, *self._tag(), *to))

    def wrap(self, node: str, command: list[str]) -> list[str]:
        """`command` started inside the node's cgroup (the shell execs it: the same pid)."""
        procs = self.cgroup(node) / "cgroup.procs"
        return ["sh", "-c", 'echo $$ > "$0" && exec "$@"', str(procs), *command]

    def _drops(self, a: str, b: str) -> list[_Rule]:
        one, other = self._address(a), self._address(b)
        return [
            _Rule(
                "raw", "PREROUTING", ("-s", f"{x}/32", "-d", f"{y}/32", *self._tag(), "-j", "DROP")
            )
            for x, y in ((one, other), (other, one))
        ]

    def _address(self, node: str) -> str:
        try:
            return self.addresses[node]
        except KeyError:
            raise ClusterError(f"node {node} has no address of its own") from None

    def cut(self, a: str, b: str) -> None:
        """Drop every packet between nodes `a` and `b`; idempotent."""
        for rule in self._drops(a, b):
            if not rule.present():
                rule.apply("-I")

    def heal(self, a: str, b: str) -> None:
        """Undo `cut`; nothing to do when the pair is not cut."""
        for rule in self._drops(a, b):
            while rule.present():
                rule.apply("-D")

    def is_cut(self, a: str, b: str) -> bool:
        return all(rule.present() for rule in self._drops(a, b))

    def remove(self) -> list[str]:
        """Every rule and cgroup of this cluster gone (after its nodes have ended); the
        problems, one line each (teardown goes on regardless)."""
        _, problems = _remove_rules(lambda owner: owner == self.owner)
        return problems + _remove_cgroups(self.base)


def _rules_of(table: str, chain: str) -> list[str]:
    done = _iptables(table, "-S", chain)
    if done.returncode != 0:
        raise ClusterError(f"iptables -t {table} -S {chain}: {done.stderr.strip()}")
    return [line for line in done.stdout.splitlines() if line.startswith(f"-A {chain} ")]


def _owner(line: str) -> tuple[int, int] | None:
    """(lab pid, serial) of a rule the lab added; None for any other rule."""
    found = _COMMENT.search(line)
    return None if found is None else (int(found.group(1)), int(found.group(2)))


def _remove_rules(whose: Callable[[tuple[int, int]], bool]) -> tuple[list[str], list[str]]:
    """Delete every lab rule whose owner `whose` accepts: (removed, problems)."""
    removed: list[str] = []
    problems: list[str] = []
    for table, chain in _CHAINS:
        for line in _rules_of(table, chain):
            owner = _owner(line)
            if owner is None or not whose(owner):
                continue
            spec = shlex.split(line.removeprefix("-A "))
            done = _iptables(table, "-D", *spec)
            if done.returncode == 0:
                removed.append(f"{table} {chain} rule of lab {owner[0]}")
            elif _iptables(table, "-C", *spec).returncode == 0:  # else another lab got it first
                problems.append(f"cannot delete {table} {line}: {done.stderr.strip()}")
    return removed, problems


def _remove_cgroups(base: Path) -> list[str]:
    """rmdir the node cgroups under `base` and `base` itself; the problems."""
    problems: list[str] = []
    try:
        nodes = sorted(p for p in base.iterdir() if p.is_dir())
    except FileNotFoundError:
        return problems  # never made, or another lab removed it
    for node in nodes:
        try:
            node.rmdir()
        except FileNotFoundError:
            continue
        except OSError as exc:
            problems.append(f"cannot remove cgroup {node}: {exc.strerror}")
    with contextlib.suppress(OSError):
        base.rmdir()
        base.parent.rmdir()  # the shared folder, when no other lab has a cluster in it
    return problems


def reap_peer_filters() -> list[str]:
    """Remove the rules and cgroups whose lab process is gone; what was removed. Raises a
    ClusterError naming what could not be (the next command tries again)."""
    if os.geteuid() != 0 or shutil.which("iptables") is None:
        return []
    removed, problems = _remove_rules(lambda owner: not process_alive(owner[0]))
    root = cgroup2_root()
    folder = None if root is None else root / PREFIX
    with contextlib.suppress(FileNotFoundError):
        bases = [] if folder is None else sorted(p for p in folder.iterdir() if p.is_dir())
        for base in bases:
            pid = base.name.split(".")[0]
            if pid.isdigit() and not process_alive(int(pid)):
                left = _remove_cgroups(base)
                problems.extend(left)
                removed.extend([] if left else [f"cgroup {base}"])
    if problems:
        raise ClusterError("; ".join(problems))
    return removed
