"""What only hosts can have done to them, as abilities of the hosts cluster: node→node links
cut by packet filters on the hosts (both ways, or one way), netem on a node's interface, a
node's clock moved by libfaketime, and a real full GC in a JVM node (jcmd on its host).

The clock: a run whose schedule has a clock fault starts every node under libfaketime's
LD_PRELOAD, reading its time from the file `nodes/<node>/faketime` in the run's folder on its
host (re-read at most every second: FAKETIME_CACHE_DURATION=1), "+0.000" until a fault writes
another offset or rate; the monotonic clock is left alone (FAKETIME_DONT_FAKE_MONOTONIC=1)
unless the run's clock faults say `monotonic = true`. The machine's clock, and every other
process on it, are never touched.
"""

from __future__ import annotations

import shlex
import threading
import time
from collections.abc import Mapping

from lab.backends.managed import ManagedCluster
from lab.backends.ssh.connection import HostConnection
from lab.backends.ssh.facts import HostFacts
from lab.backends.ssh.filter_netem import filter_netem_lines
from lab.backends.ssh.host_tools import (
    clock_spec,
    drift_offset,
    filter_lines,
    netem_clear,
    netem_lines,
)
from lab.backends.ssh.hosts_file import Host
from lab.backends.ssh.node import HostNode
from lab.backends.ssh.session import HostSession
from lab.ground.errors import ClusterError
from lab.ground.topology import split_node_link
from lab.targets.on_hosts import HostPlace, RunsOnHosts
from lab.targets.protocol import JvmTarget

__all__ = ["HostAbilities"]

_AGE = "awk -v t=$(getconf CLK_TCK) -v b=$(awk '/^btime/ {{print $2}}' /proc/stat) " \
    "-v now=$(date +%s.%N) '{{print now - (b + $22 / t)}}' /proc/{pid}/stat"  # fmt: skip


class HostAbilities(ManagedCluster[HostNode]):
    """Mixed into SshCluster, which sets these as it starts."""

    session: HostSession
    conns: dict[str, HostConnection]
    clock_mode: str | None

    def host(self, node: str) -> Host:
        raise NotImplementedError

    def place(self, node: str) -> HostPlace:
        raise NotImplementedError

    def _facts(self) -> dict[str, HostFacts]:
        raise NotImplementedError

    def _conn(self, node: str) -> HostConnection:
        self.node(node)
        try:
            return self.conns[node]
        except KeyError:
            raise ClusterError(f"host of node {node} is not connected") from None

    # -- node→node links: packet filters on the hosts ------------------------------------------

    filters_peer_links = True

    def _peer_links_refusal(self, how: str) -> str | None:
        if how == "cut":
            for facts in self._facts().values():
                refusal = facts.filter_refusal()
                if refusal is not None:
                    return refusal
            return None
        return (
            "on hosts node→node links go straight between the machines: no proxy can slow "
            "them (netem shapes a node's interface)"
        )

    def _filter(
        self, node: str, outgoing: tuple[str, ...], incoming: tuple[str, ...], on: bool
    ) -> None:
        host = self.host(node)
        line = filter_lines(outgoing, incoming, self.session.tag, on, host.privileged)
        self._conn(node).run(line)

    def set_link(self, name: str, enabled: bool) -> None:
        """A client link through Toxiproxy; a node→node link cut on both hosts, both ways."""
        ends = split_node_link(self.require_link(name))
        if ends is None:
            super().set_link(name, enabled)
            return
        a, b = ends
        address_a, address_b = self.host(a).address, self.host(b).address
        self._filter(a, (address_b,), (address_b,), enabled)
        self._filter(b, (address_a,), (address_a,), enabled)
        self.events.emit("link.filter", a, link=name, peer=b, enabled=enabled)

    one_way_filters = True

    def set_one_way(
        self, senders: tuple[str, ...], receivers: tuple[str, ...], enabled: bool
    ) -> None:
        """What `senders` send `receivers` dropped (on both hosts); the other way flows."""
        for node in (*senders, *receivers):
            self.node(node)
        for a in senders:
            for b in receivers:
                self._filter(a, (self.host(b).address,), (), enabled)
                self._filter(b, (), (self.host(a).address,), enabled)
                self.events.emit(
                    "link.filter", a, link=f"{a}_to_{b}", peer=b, enabled=enabled, one_way=True
                )

    # -- netem on a node's interface -------------------------------------------------------------

    def netem_refusal(self, params: Mapping[str, object]) -> str | None:
        for facts in self._facts().values():
            refusal = facts.netem_refusal(params)
            if refusal is not None:
                return refusal
        return None

    def _interface(self, node: str) -> str:
        interface = self._facts()[node].interface
        if interface is None:
            raise ClusterError(f"no interface found on node {node}'s host for netem")
        return interface

    def _netem_peers(self, node: str) -> tuple[str, ...]:
        """Where the node's host sends: the other hosts, and the lab's machine."""
        lab = self._conn(node).run("echo ${SSH_CONNECTION%% *}").stdout.strip()
        others = [self.host(n).address for n in self.node_names if n != node]
        return tuple(dict.fromkeys([*others, *([lab] if lab else [])]))

    def shape(self, node: str, params: Mapping[str, object]) -> None:
        """tc netem where the host's kernel has it; else loss and duplication by packet
        filter (lab.backends.ssh.filter_netem)."""
        host, interface = self.host(node), self._interface(node)
        if self._facts()[node].has("netem"):
            root = shlex.quote(self.place(node).root)
            line = f"echo {shlex.quote(interface)} > {root}/netem.iface && " + netem_lines(
                interface, params, host.port, host.privileged
            )
            how = "tc netem"
        else:
            peers = self._netem_peers(node)
            line = filter_netem_lines(
                interface, params, peers, self.session.tag, host.port, True, host.privileged
            )
            how = "iptables"
        self.__dict__.setdefault("_shaped", {})[node] = dict(params)
        self._conn(node).run(line)
        self.events.emit("netem.set", node, interface=interface, params=dict(params), how=how)

    def unshape(self, node: str) -> None:
        host, interface = self.host(node), self._interface(node)
        params = self.__dict__.get("_shaped", {}).pop(node, None)
        if self._facts()[node].has("netem"):
            self._conn(node).run(netem_clear(interface, host.privileged))
        elif params is not None:
            peers = self._netem_peers(node)
            self._conn(node).run(
                filter_netem_lines(
                    interface, params, peers, self.session.tag, host.port, False, host.privileged
                )
            )
        self.events.emit("netem.clear", node, interface=interface)

    # -- the clock, by libfaketime ---------------------------------------------------------------

    def clock_refusal(self, monotonic: bool) -> str | None:
        python = isinstance(self.target, RunsOnHosts) and "python" in self.target.host_needs()
        for facts in self._facts().values():
            refusal = facts.clock_refusal(monotonic, python)
            if refusal is not None:
                return refusal
        wanted = "monotonic" if monotonic else "realtime"
        if self.clock_mode is not None and self.clock_mode != wanted:
            return (
                "a run's clock faults all fake the monotonic clock or none do (its nodes start "
                "under libfaketime one way)"
            )
        return None

    def _clock_env(self, node: str) -> list[tuple[str, str]]:
        if self.clock_mode is None:
            return []
        library = self._facts()[node].values.get("faketime")
        if not library:
            raise ClusterError(f"no libfaketime on node {node}'s host")
        return [
            ("LD_PRELOAD", library),
            ("FAKETIME_TIMESTAMP_FILE", f"{self.place(node).node_dir(node)}/faketime"),
            ("FAKETIME_CACHE_DURATION", "1"),
            ("FAKETIME_DONT_FAKE_MONOTONIC", "0" if self.clock_mode == "monotonic" else "1"),
            ("LC_NUMERIC", "C"),
        ]

    def _write_clock(self, node: str, spec: str) -> None:
        if self.clock_mode is None:
            raise ClusterError("this run's nodes were not started under libfaketime")
        path = shlex.quote(f"{self.place(node).node_dir(node)}/faketime")
        self._conn(node).run(
            f"printf '%s\\n' {shlex.quote(spec)} > {path}.tmp && mv {path}.tmp {path}"
        )

    def jump_clock(self, node: str, offset_s: float) -> None:
        self._write_clock(node, clock_spec(offset_s))
        self.events.emit("clock.set", node, offset_s=offset_s, rate=1.0, mode=self.clock_mode)

    def drift_clock(self, node: str, rate: float) -> None:
        pid = self.node(node).pid
        if pid is None:
            raise ClusterError(f"clock_drift: node {node} is not running")
        age = float(self._conn(node).run(_AGE.format(pid=pid)).stdout.strip() or 0)
        self._write_clock(node, clock_spec(drift_offset(age, rate), rate))
        self.events.emit("clock.set", node, offset_s=0.0, rate=rate, mode=self.clock_mode)

    def reset_clock(self, node: str) -> None:
        self._stop_strobe(node)
        self._write_clock(node, clock_spec(0.0))
        self.events.emit("clock.set", node, offset_s=0.0, rate=1.0, mode=self.clock_mode)

    def strobe_clock(self, node: str, delta_s: float, period_s: float) -> None:
        """The clock flips between `delta_s` ahead and right every `period_s`, until reset."""
        self._stop_strobe(node)
        stop = threading.Event()

        def flip() -> None:
            ahead = True
            while not stop.is_set():
                try:
                    self._write_clock(node, clock_spec(delta_s if ahead else 0.0))
                except ClusterError:
                    return
                ahead = not ahead
                stop.wait(period_s)

        thread = threading.Thread(target=flip, name=f"strobe-{node}", daemon=True)
        self.__dict__.setdefault("_strobes", {})[node] = (stop, thread)
        thread.start()
        self.events.emit("clock.strobe", node, delta_s=delta_s, period_s=period_s)

    def _stop_strobe(self, node: str) -> None:
        found = self.__dict__.get("_strobes", {}).pop(node, None)
        if found is not None:
            stop, thread = found
            stop.set()
            thread.join(timeout=30)

    def _stop_strobes(self) -> None:
        for node in list(self.__dict__.get("_strobes", {})):
            self._stop_strobe(node)

    # -- a JVM's full GC, on its host ------------------------------------------------------------

    def _run_full_gc(self, name: str, target: JvmTarget) -> str:
        command = shlex.join(target.full_gc_command(self.node(name).pid))
        started = time.monotonic()
        out = self._conn(name).run(command, timeout_s=120).stdout.strip()
        return out or f"done in {time.monotonic() - started:.3f} s"
