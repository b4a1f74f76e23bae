"""An intruder against a real group of broker_ref node processes: it speaks the peer
protocol, names a member of the group, and claims mastership at a far newer term.

Without a group secret the claim is heard: the group takes the intruder's term and its
master steps down (the control). With one, the intruder cannot prove the secret: it is
refused (REF-1009), nothing it sends is read, the master and its term stay, and clients
lose nothing. A stranger node process configured with another group's secret (and the
highest priority) is refused the same way and never becomes master.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from group_helpers import LocalGroup, until
from proton import Message
from proton.utils import BlockingConnection

from broker_ref.peer_auth import DIALLER, new_nonce, proof
from broker_ref.peer_wire import encode_message

pytestmark = pytest.mark.processes

SECRET = "the-group-secret-of-this-run-0123456789"
WRONG = "a-guessed-secret-0123456789abcdef"


def _read(sock: socket.socket) -> dict[str, Any] | None:
    try:
        head = sock.recv(8, socket.MSG_WAITALL)
        if len(head) < 8:
            return None
        head_len, payload_len = struct.unpack(">II", head)
        header = json.loads(sock.recv(head_len, socket.MSG_WAITALL))
        if payload_len:
            sock.recv(payload_len, socket.MSG_WAITALL)
        return dict(header)
    except (OSError, ValueError):
        return None


def _intrude(port: int, to: str, as_node: str, secret: str, seconds: float) -> list[dict[str, Any]]:
    """Dial node `to`'s replication port as `as_node`, with a hello whose proof is made with
    `secret`, then claim mastership (status, appends) for `seconds`; return what the node
    sent back."""
    heard: list[dict[str, Any]] = []
    with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
        nd, stamp = new_nonce(), int(time.time() * 1000)
        hello = {"type": "hello", "group": "lab", "node": as_node, "mechanism": "ANONYMOUS"}
        mine = proof(secret, DIALLER, "lab", as_node, to, nd, str(stamp))
        sock.sendall(
            encode_message({**hello, "to": to, "nonce": nd, "timestamp": stamp, "proof": mine})
        )
        sock.settimeout(0.5)
        deadline = time.monotonic() + seconds
        term = 10_000
        while time.monotonic() < deadline:
            try:
                sock.sendall(
                    encode_message(
                        {
                            "type": "status",
                            "term": term,
                            "role": "MASTER",
                            "last_txid": 10**6,
                            "streams": [],
                        }
                    )
                )
                sock.sendall(
                    encode_message({"type": "append", "term": term, "first": 1}, b"\x00" * 64)
                )
                sock.sendall(
                    encode_message(
                        {
                            "type": "vote_request",
                            "term": term + 1,
                            "last_txid": 10**6,
                            "last_term": term,
                        }
                    )
                )
            except OSError:
                pass  # the node closed the link: what it said before that is still to read
            answer = _read(sock)
            if answer is not None:
                heard.append(answer)
            time.sleep(0.05)
    return heard


def _send(port: int, ids: list[str]) -> None:
    conn = BlockingConnection(f"127.0.0.1:{port}", timeout=10)
    try:
        sender = conn.create_sender("q")
        for mid in ids:
            sender.send(Message(id=mid, body=mid.encode(), durable=True), timeout=10)
    finally:
        conn.close()


def _receive_all(port: int) -> list[str]:
    conn = BlockingConnection(f"127.0.0.1:{port}", timeout=10)
    got: list[str] = []
    try:
        receiver = conn.create_receiver("q")
        while True:
            try:
                msg = receiver.receive(timeout=2)
            except Exception:  # proton's Timeout: the queue is empty
                break
            got.append(str(msg.id))
            receiver.accept()
    finally:
        conn.close()
    return got


def _held_everywhere(group: LocalGroup, depth: int) -> None:
    until(lambda: [_facts(group, n)[2] for n in group.configs], lambda seen: set(seen) == {depth})


def _facts(group: LocalGroup, name: str) -> tuple[str, int, int]:
    body = group.request(name)[1]
    return body["role"], body["term"], body["queues"].get("q", {"depth": 0})["depth"]


def test_without_a_secret_the_intruders_claim_is_heard(
    make_group: Callable[..., LocalGroup],
) -> None:
    """The control: the same intruder against a group without a secret moves its term."""
    group = make_group(3)
    master = group.master()
    term = group.request(master)[1]["term"]
    as_node = next(n for n in group.configs if n != master)
    _intrude(group.ports[master][2], master, as_node, WRONG, 1.5)
    assert group.request(master)[1]["term"] >= 10_000 > term


def test_an_intruder_with_the_wrong_secret_changes_nothing(
    make_group: Callable[..., LocalGroup],
) -> None:
    group = make_group(3, all={"group_secret": SECRET})
    master = group.master()
    replicas = [n for n in group.configs if n != master]
    port = group.ports[master][0]
    _send(port, [f"before-{i}" for i in range(20)])
    _held_everywhere(group, 20)  # replicated before the snapshot
    before = {n: _facts(group, n) for n in group.configs}
    txids = {n: group.request(n)[1]["lastKnownReplicationTransactionId"] for n in group.configs}

    # clients keep sending while the intruder attacks every node, as a replica's name
    sender = threading.Thread(target=_send, args=(port, [f"during-{i}" for i in range(20)]))
    sender.start()
    heard = {
        n: _intrude(
            group.ports[n][2], n, replicas[0] if n != replicas[0] else replicas[1], WRONG, 1.0
        )
        for n in group.configs
    }
    sender.join(30)

    # refused, told so, logged on every node it tried; never a word about the secret
    for name, answers in heard.items():
        assert answers == [
            {"type": "refused", "code": 320, "text": "wrong proof of the group secret"}
        ], name
        log = group.oplog(name)
        assert "REF-1009" in log and "wrong proof of the group secret" in log, name
        assert SECRET not in log and WRONG not in log
    # the master, its term and its roles stay; nothing was injected
    _held_everywhere(group, 40)  # the sends during the attack reach every node
    after = {n: _facts(group, n) for n in group.configs}
    assert group.master() == master
    for name in group.configs:
        assert after[name][:2] == before[name][:2], name
        txid = group.request(name)[1]["lastKnownReplicationTransactionId"]
        assert txids[name] < txid < 10**6
    # clients lose nothing
    got = _receive_all(port)
    assert sorted(got) == sorted(
        [f"before-{i}" for i in range(20)] + [f"during-{i}" for i in range(20)]
    )


def test_a_node_of_another_group_with_the_highest_priority_never_becomes_master(
    make_group: Callable[..., LocalGroup],
) -> None:
    group = make_group(3, all={"group_secret": SECRET})
    master = group.master()
    term = group.request(master)[1]["term"]
    _send(group.ports[master][0], [f"m-{i}" for i in range(10)])
    # a stranger that calls itself n3's twin: same group name, a permitted name, its own
    # secret, highest priority, dialling the group's real nodes
    stranger = make_group(3, start=False, all={"group_secret": WRONG, "priority": 3})
    config = stranger.configs["n3"]
    config["peers"] = {p: f"127.0.0.1:{group.ports[p][2]}" for p in ("n1", "n2")}
    stranger.configs = {"n3": config}
    stranger.start("n3")
    deadline = time.monotonic() + 8
    while time.monotonic() < deadline and not all(
        "REF-1009" in group.oplog(n) for n in ("n1", "n2")
    ):
        time.sleep(0.2)
    time.sleep(2)  # several election timeouts
    for name in ("n1", "n2"):
        log = group.oplog(name)
        assert "REF-1009" in log and "node 'n3'" in log, name
    # the stranger only dials: it is told why it was refused
    told = "REF-2012 : Client closed connection with 320 : wrong proof of the group secret"
    assert told in stranger.oplog("n3")
    assert stranger.request("n3")[1]["role"] != "MASTER"
    assert group.master() == master and group.request(master)[1]["term"] == term
    assert sorted(_receive_all(group.ports[master][0])) == sorted(f"m-{i}" for i in range(10))
