"""The AMQP port's limits as bookkeeping (time passed in), their config keys, and the guard
applied to a real proton reactor in this process."""

from __future__ import annotations

import io
import socket
import threading
from pathlib import Path

import pytest
from broker_helpers import _free_port
from proton import ConnectionException, Delivery
from proton.reactor import Container
from proton.utils import BlockingConnection

from broker_ref.amqp_server import AmqpServer
from broker_ref.commit import GroupCommit
from broker_ref.config import parse_config
from broker_ref.connection_guard import BurstLog, ConnectionLimits, Gate
from broker_ref.errors import ConfigError
from broker_ref.log_store import LogStore
from broker_ref.oplog import OperationalLog
from broker_ref.queues import QueueBook
from broker_ref.roles import Role, RoleTracker

LIMITS = ConnectionLimits(max_connections=2, handshake_timeout_s=10.0, closing_grace_s=1.0)

# ---- the gate -----------------------------------------------------------------------------------


def test_the_cap_admits_then_refuses_with_grace_then_drops() -> None:
    gate: Gate[str] = Gate(LIMITS)
    verdicts = [gate.arrive(key, now=0.0) for key in "abcdef"]
    assert verdicts == ["admitted", "admitted", "refused", "refused", "dropped", "dropped"]
    assert (gate.admitted, gate.refused) == (2, 2)
    assert gate.open("a") and not gate.open("c")  # an open over the cap is refused
    gate.gone("b")
    assert gate.arrive("g", now=1.0) == "admitted"  # a freed place is taken again


def test_a_handshake_not_done_in_time_is_overdue_once() -> None:
    gate: Gate[str] = Gate(LIMITS)
    gate.arrive("slow", now=0.0)
    gate.arrive("quick", now=1.0)
    assert gate.open("quick")
    assert gate.overdue(9.9) == ([], [])
    assert gate.overdue(10.0) == (["slow"], [])
    assert gate.overdue(20.0) == ([], [])  # reported once
    assert gate.admitted == 2  # still counted until its socket is gone
    gate.gone("slow")
    assert gate.admitted == 1 and gate.handshaking == 0


def test_refused_and_winding_down_connections_are_closed_after_the_grace() -> None:
    gate: Gate[str] = Gate(LIMITS)
    for key in "abc":
        gate.arrive(key, now=0.0)
    gate.winding_down("a", now=0.5)  # its peer's input ended
    gate.winding_down("a", now=0.9)  # the first deadline stands
    gate.winding_down("nobody", now=0.5)  # not tracked: ignored
    assert gate.overdue(0.99) == ([], [])
    assert gate.overdue(1.0) == ([], ["c"])
    assert gate.overdue(1.5) == ([], ["a"])
    assert gate.overdue(11.0) == (["b"], [])


# ---- the burst log ------------------------------------------------------------------------------


def test_a_burst_is_logged_once_then_counted() -> None:
    log = BurstLog(window_s=10.0)
    logged = [log.note("refused", now=float(t)) for t in range(5)]
    assert logged == [True, False, False, False, False]
    assert log.note("handshake", now=1.0, count=40)  # another kind has its own burst
    assert log.ended(9.0) == []
    assert log.ended(10.0) == [("refused", 4, 10.0)]
    assert log.ended(11.0) == []  # the handshake burst had nothing more to report
    assert log.note("refused", now=12.0)  # a new burst


def test_a_quiet_burst_ends_without_a_count() -> None:
    log = BurstLog(window_s=1.0)
    assert log.note("error x", now=0.0)
    assert log.ended(5.0) == []
    assert log.note("error x", now=5.0)


# ---- the config keys ----------------------------------------------------------------------------

BASE = {"name": "n1", "amqp_port": 5672, "management_port": 8080, "data_dir": "/tmp/d"}


def test_limits_have_sane_defaults_and_are_read_from_the_config() -> None:
    default = parse_config(BASE)
    assert (default.max_connections, default.handshake_timeout_s) == (1000, 10.0)
    config = parse_config(BASE | {"max_connections": 50, "handshake_timeout_s": 2.5})
    assert (config.max_connections, config.handshake_timeout_s) == (50, 2.5)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("max_connections", 0),
        ("max_connections", "10"),
        ("max_connections", True),
        ("handshake_timeout_s", 0),
        ("handshake_timeout_s", -1),
    ],
)
def test_bad_limits_are_config_errors_naming_the_key(key: str, value: object) -> None:
    with pytest.raises(ConfigError, match=key):
        parse_config(BASE | {key: value})


# ---- the guard in a reactor ---------------------------------------------------------------------


class _Lines(io.StringIO):
    def lines(self) -> list[str]:
        return self.getvalue().splitlines()


def test_the_guard_refuses_over_the_cap_and_times_out_silent_sockets(tmp_path: Path) -> None:
    store, _ = LogStore.open(tmp_path)
    out = _Lines()
    oplog = OperationalLog("n1", out)
    roles = RoleTracker("n1", oplog)
    roles.change(Role.MASTER)
    container = Container()
    port = _free_port()
    stop = threading.Event()
    server = AmqpServer(
        container=container,
        acceptor=container.acceptor("127.0.0.1", str(port)),
        node="n1",
        idle_timeout_s=0,
        queues=QueueBook(),
        commit=GroupCommit[Delivery](store, coalescing=True),
        roles=roles,
        oplog=oplog,
        shutdown_requested=stop.is_set,
        limits=ConnectionLimits(max_connections=1, handshake_timeout_s=3.0),
    )
    container.handler.add(server)
    server.start_timers()
    reactor = threading.Thread(target=container.run, daemon=True)
    reactor.start()
    try:
        silent = socket.create_connection(("127.0.0.1", port), timeout=5)
        silent.sendall(b"AMQP\x00\x01\x00\x00")  # a header, never an open
        assert silent.recv(8) == b"AMQP\x00\x01\x00\x00"  # accepted: the one place is taken
        with pytest.raises(ConnectionException, match="amqp:resource-limit-exceeded"):
            BlockingConnection(f"127.0.0.1:{port}", timeout=5).create_sender("q")
        silent.settimeout(10)
        assert silent.recv(1) == b""  # closed by the node, 3 s after it connected
        client = BlockingConnection(f"127.0.0.1:{port}", timeout=5)  # the place is free
        client.create_sender("q")
        client.close()
    finally:
        stop.set()
        reactor.join(10)
        store.close()
    assert not reactor.is_alive()
    codes = [line.split(" ")[3] for line in out.lines()]
    assert codes.count("REF-3001") == 1 and codes.count("REF-3002") == 1
