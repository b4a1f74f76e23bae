"""broker_ref serving AMQP: the server in this process, then messaging with the node process."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from broker_helpers import NodeFactory, _free_port, _Lines, _receive_all, _send
from group_helpers import until
from proton import ConnectionException, Delivery
from proton.reactor import Container
from proton.utils import BlockingConnection

from broker_ref.amqp_server import AmqpServer
from broker_ref.commit import GroupCommit
from broker_ref.log_store import LogStore
from broker_ref.oplog import OperationalLog
from broker_ref.queues import QueueBook
from broker_ref.roles import Role, RoleTracker

# ---- the AMQP server in this process ----------------------------------------------------------


def test_a_node_that_is_not_master_turns_clients_away(tmp_path: Path) -> None:
    store, _ = LogStore.open(tmp_path)
    oplog = OperationalLog("n1", _Lines())  # type: ignore[arg-type]
    roles = RoleTracker("n1", oplog)
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
    )
    container.handler.add(server)
    reactor = threading.Thread(target=container.run, daemon=True)
    reactor.start()
    try:
        assert roles.current is Role.WAITING
        with pytest.raises(ConnectionException) as refused:
            BlockingConnection(f"127.0.0.1:{port}", timeout=5).create_sender("q")
        assert "amqp:connection:forced" in str(refused.value)
        assert "not the master" in str(refused.value)
    finally:
        stop.set()
        reactor.join(10)
        store.close()
    assert not reactor.is_alive()


# ---- integration: messaging with the node as a process --------------------------------------


@pytest.mark.processes
def test_send_is_accepted_and_receive_accept_empties_the_queue(start_node: NodeFactory) -> None:
    node = start_node()
    ids = [f"m{i}" for i in range(20)]
    assert _send(node.url, "orders", ids) == ["ACCEPTED"] * 20
    assert node.queue("orders") == {"depth": 20, "unacked": 0}
    received = _receive_all(node.url, "orders")
    assert [m.id for m in received] == ids
    assert [m.body for m in received] == [f"body of {i}" for i in ids]
    assert all(m.delivery_count == 0 for m in received)
    assert node.queue("orders") == {"depth": 0, "unacked": 0}


@pytest.mark.processes
def test_without_coalescing_every_message_is_still_accepted(start_node: NodeFactory) -> None:
    node = start_node(coalescing_sync=False)
    ids = [f"m{i}" for i in range(10)]
    assert _send(node.url, "q", ids) == ["ACCEPTED"] * 10
    assert [m.id for m in _receive_all(node.url, "q")] == ids


@pytest.mark.processes
def test_unsettled_message_comes_back_redelivered_when_its_consumer_goes(
    start_node: NodeFactory,
) -> None:
    node = start_node()
    _send(node.url, "q", ["a", "b", "c"])
    connection = BlockingConnection(node.url, timeout=10)
    receiver = connection.create_receiver("q", credit=1)
    assert receiver.receive(timeout=5).id == "a"
    # The blocking receiver tops its credit up as soon as "a" arrives, so "b" may be
    # handed out too, and come back redelivered with "a".
    assert node.queue("q")["unacked"] >= 1
    connection.close()
    received = _receive_all(node.url, "q")
    assert [m.id for m in received] == ["a", "b", "c"]
    assert received[0].delivery_count == 1 and received[2].delivery_count == 0
    assert node.queue("q") == {"depth": 0, "unacked": 0}


@pytest.mark.processes
def test_released_message_waits_again_in_front(start_node: NodeFactory) -> None:
    node = start_node()
    _send(node.url, "q", ["a", "b"])
    connection = BlockingConnection(node.url, timeout=10)
    receiver = connection.create_receiver("q", credit=1)
    assert receiver.receive(timeout=5).id == "a"
    receiver.release(delivered=False)
    # "b" was handed out when the receiver topped its credit up after "a".
    assert receiver.receive(timeout=5).id == "b"
    receiver.accept()
    again = receiver.receive(timeout=5)
    assert (again.id, again.delivery_count) == ("a", 0)
    receiver.reject()
    connection.close()
    assert node.queue("q") == {"depth": 0, "unacked": 0}


@pytest.mark.processes
def test_a_silent_consumer_times_out_and_its_message_is_redelivered(
    start_node: NodeFactory,
) -> None:
    node = start_node(idle_timeout_s=1.0)
    _send(node.url, "q", ["a"])
    silent = BlockingConnection(node.url, timeout=10)
    assert silent.create_receiver("q", credit=1).receive(timeout=5).id == "a"
    # `silent` processes no I/O from here on, so it sends no heartbeats: the node closes it.
    # The sender's connection closed first; the silent one's close is the second.
    until(node.oplog, lambda lines: [code for _, code, _ in lines].count("CON-1002") >= 2)
    received = _receive_all(node.url, "q")
    assert [(m.id, m.delivery_count) for m in received] == [("a", 1)]
    assert any(code == "CON-1002" for _, code, _ in node.oplog())


@pytest.mark.processes
@pytest.mark.parametrize("waiting", [0, 3])
def test_drain_completes_when_the_queue_runs_out(start_node: NodeFactory, waiting: int) -> None:
    node = start_node()
    _send(node.url, "q", [f"m{i}" for i in range(waiting)])
    connection = BlockingConnection(node.url, timeout=10)
    receiver = connection.create_receiver("q", credit=0)
    link = receiver.link
    link.drain(10)
    connection.wait(lambda: link.credit == 0 and not link.draining(), timeout=5, msg="drain")
    got = [receiver.receive(timeout=1).id for _ in range(waiting)]
    assert got == [f"m{i}" for i in range(waiting)]
    connection.close()


@pytest.mark.processes
def test_management_api_reports_health_and_the_virtualhostnode(start_node: NodeFactory) -> None:
    node = start_node(group="weather")
    _send(node.url, "q", ["a", "b"])
    assert node.get("/health") == (200, {"status": "ok", "name": "n1", "role": "MASTER"})
    status, body = node.get("/api/latest/virtualhostnode/n1")
    assert status == 200
    assert body["name"] == "n1"
    assert body["groupName"] == "weather"
    assert body["role"] == "MASTER"
    assert body["lastKnownReplicationTransactionId"] == 3
    assert body["queues"] == {"q": {"depth": 2, "unacked": 0}}
    assert body["priority"] == 1 and body["designatedPrimary"] is False
    assert body["quorumOverride"] == 0
    assert body["durability"] == "NO_SYNC,NO_SYNC,SIMPLE_MAJORITY"
    assert node.get("/api/latest/virtualhostnode/n1", auth="admin:wrong")[0] == 401
    assert node.get("/api/latest/remotereplicationnode/n1") == (200, [])
    assert node.get("/api/latest/virtualhostnode/n2")[0] == 404
    # Not in an active-passive cluster: qpid-ha's `standalone`.
    assert node.get("/api/latest/ha/n1") == (200, {"status": "standalone", "name": "n1"})
    assert node.get("/nothing/here")[0] == 404
