"""Node→node links between local processes: own loopback addresses, cut by packet filters.

The real thing: processes in their own cgroups, real iptables rules, real TCP on
127.0.0.0/8. Without root the lab refuses (the unit tests below say so).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.backends.process import peer_filter
from lab.backends.process.peer_filter import PeerFilter, node_address, reap_peer_filters
from lab.ground.errors import ClusterError

ROOT = Path(__file__).resolve().parent.parent
needs_root = pytest.mark.skipif(
    peer_filter.peer_filter_refusal() is not None,
    reason=f"cutting node links between local processes: {peer_filter.peer_filter_refusal()}",
)

# An echo server: answers every connection with the address it sees the peer at.
LISTEN = textwrap.dedent(
    """
    import socket, sys
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((sys.argv[1], 0)); s.listen(); print(s.getsockname()[1], flush=True)
    while True:
        c, peer = s.accept(); c.sendall(peer[0].encode()); c.close()
    """
)
DIAL = textwrap.dedent(
    """
    import socket, sys
    try:
        c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=1.5)
        print(c.recv(64).decode())
    except OSError as exc:
        print("unreachable", type(exc).__name__)
    """
)


def test_a_nodes_address_is_made_from_its_replication_port() -> None:
    assert node_address(14000) == "127.77.54.176"
    assert node_address(14001) != node_address(14000)
    assert node_address(65535) == "127.77.255.255"
    with pytest.raises(ValueError):
        node_address(0)


def test_without_root_the_lab_says_why_it_cannot_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(peer_filter.os, "geteuid", lambda: 1000)
    refusal = peer_filter.peer_filter_refusal()
    assert refusal is not None and "only as root" in refusal and "--backend docker" in refusal
    assert reap_peer_filters() == []  # nothing a non-root lab could have left


def test_a_rule_of_the_lab_names_its_owner_and_others_are_ignored() -> None:
    assert peer_filter._owner('-A PREROUTING -m comment --comment "lab-peers:41.3" -j DROP') == (
        41,
        3,
    )
    assert peer_filter._owner("-A PREROUTING -m comment --comment lab-peers:7.1 -j DROP") == (7, 1)
    assert peer_filter._owner("-A PREROUTING -s 10.0.0.1/32 -j DROP") is None
    assert peer_filter._owner('-A POSTROUTING -m comment --comment "someone:1.1" -j ACCEPT') is None


class _Nodes:
    """Three 'nodes' a, b, c: each an echo server in its own cgroup at its own address."""

    def __init__(self, base_port: int) -> None:
        self.filter = PeerFilter()
        self.servers: dict[str, subprocess.Popen[str]] = {}
        self.ports: dict[str, int] = {}
        for k, name in enumerate("abc"):
            self.filter.add_node(name, node_address(base_port + k))

    def start(self) -> None:
        for name, address in self.filter.addresses.items():
            command = self.filter.wrap(name, [sys.executable, "-c", LISTEN, address])
            proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
            self.servers[name] = proc
            assert proc.stdout is not None
            self.ports[name] = int(proc.stdout.readline())

    def dial(self, source: str, dest: str) -> str:
        """What `dest` saw `source` dial from, or `unreachable …`."""
        address = self.filter.addresses[dest]
        command = [sys.executable, "-c", DIAL, address, str(self.ports[dest])]
        done = subprocess.run(
            self.filter.wrap(source, command), capture_output=True, text=True, timeout=30
        )
        return done.stdout.strip()

    def stop(self) -> list[str]:
        for proc in self.servers.values():
            proc.kill()
            proc.wait()
        return self.filter.remove()


@pytest.fixture
def nodes() -> Iterator[_Nodes]:
    made = _Nodes(base_port=40000 + os.getpid() % 20000)
    try:
        made.start()
        yield made
    finally:
        assert made.stop() == []


def _lab_rules() -> str:
    return "".join(
        subprocess.run(["iptables", "-w", "-t", t, "-S", c], capture_output=True, text=True).stdout
        for t, c in (("raw", "PREROUTING"), ("nat", "POSTROUTING"))
    )


@needs_root
def test_each_node_dials_from_its_own_address_and_a_cut_pair_goes_silent(nodes: _Nodes) -> None:
    a, b, c = (nodes.filter.addresses[n] for n in "abc")
    assert nodes.dial("a", "b") == a  # the peer sees a at a's address, not 127.0.0.1
    assert nodes.dial("b", "a") == b
    nodes.filter.cut("a", "b")
    nodes.filter.cut("a", "b")  # idempotent
    assert nodes.filter.is_cut("a", "b")
    assert nodes.dial("a", "b") == "unreachable TimeoutError"  # dropped, not refused
    assert nodes.dial("b", "a") == "unreachable TimeoutError"
    assert nodes.dial("c", "b") == c  # the rest of the group is untouched
    assert nodes.dial("a", "c") == a
    nodes.filter.heal("a", "b")
    nodes.filter.heal("a", "b")
    assert not nodes.filter.is_cut("a", "b")
    assert nodes.dial("a", "b") == a


@needs_root
def test_teardown_leaves_no_rule_and_no_cgroup(tmp_path: Path) -> None:
    made = _Nodes(base_port=41000 + os.getpid() % 20000)
    made.start()
    made.filter.cut("b", "c")
    assert made.filter.label in _lab_rules()
    assert made.stop() == []
    assert made.filter.label not in _lab_rules()
    assert not made.filter.base.exists()


@needs_root
def test_a_killed_labs_rules_and_cgroups_are_reaped() -> None:
    script = textwrap.dedent(
        """
        import time
        from lab.backends.process.peer_filter import PeerFilter, node_address
        f = PeerFilter()
        f.add_node("x", node_address(45001)); f.add_node("y", node_address(45002))
        f.cut("x", "y")
        print(f.label, f.base, flush=True)
        time.sleep(600)
        """
    )
    owner = subprocess.Popen(
        [sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    assert owner.stdout is not None
    label, base = owner.stdout.readline().split()
    assert label in _lab_rules() and Path(base).is_dir()
    assert not any(label in line for line in reap_peer_filters())  # its lab lives: left alone
    assert label in _lab_rules()
    owner.send_signal(signal.SIGKILL)
    owner.wait()
    removed = reap_peer_filters()
    assert label not in _lab_rules() and not Path(base).exists()
    # Two drops, two SNATs and the cgroup folder, less what a `lab` command of another test
    # may have reaped first (every command reaps).
    expected = {f"{t} rule of lab {owner.pid}" for t in ("raw PREROUTING", "nat POSTROUTING")}
    assert {r for r in removed if str(owner.pid) in r or base in r} <= {*expected, f"cgroup {base}"}
    assert all(f"lab {owner.pid}" not in r for r in reap_peer_filters())  # nothing left of it


@needs_root
def test_a_cut_between_unknown_nodes_is_an_error(nodes: _Nodes) -> None:
    with pytest.raises(ClusterError, match="no address of its own"):
        nodes.filter.cut("a", "z")
