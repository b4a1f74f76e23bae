"""A replica that syncs again while an earlier stream's appends are still arriving: what
the earlier stream sends is not applied between the new sync's reply and the end of its
rollback (a full copy's rollback of a long log took longer than the one-second retry, and
a batch of the old stream landed after the log was emptied: "txid 2 does not follow 0")."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from broker_ref.follower import Follower
from broker_ref.frame_log import FrameLog
from broker_ref.group_core import GroupCore
from broker_ref.records import Enqueue, decode_payload, encode_frame
from broker_ref.roles import Role


class FakeNet:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def send(self, peer: str, header: dict[str, Any], payload: bytes = b"") -> bool:
        self.sent.append(header)
        return True


class FakeStore:
    """The reactor side: rollbacks wait until `finish_rollback`; applies are recorded."""

    def __init__(self) -> None:
        self.applied: list[list[int]] = []
        self.pending: Callable[[], None] | None = None

    def rollback(self, keep: int, restore: bool, master: str, done: Callable[[], None]) -> None:
        self.pending = done

    def apply(self, frames: list[bytes], done: Callable[[int], None]) -> None:
        self.applied.append([_txid(f) for f in frames])

    def finish_rollback(self) -> None:
        assert self.pending is not None
        done, self.pending = self.pending, None
        done()


class FakeCore:
    def __init__(self) -> None:
        self.name, self.term, self.master, self.master_seen = "n2", 3, "n1", 0.0
        self.frames = FrameLog()
        for txid in range(1, 6):  # what this node held before it was away
            self.frames.append(txid, 2, encode_frame(Enqueue(txid, "q", txid, b"x", 2)))
        self.store = FakeStore()
        self.net = FakeNet()

    def call(self, action: Callable[[], object]) -> None:
        action()

    def set_role(self, role: Role, reason: str) -> None:
        pass


def _txid(frame: bytes) -> int:
    return decode_payload(memoryview(frame)[8:]).txid


def _append(first: int, count: int) -> tuple[dict[str, Any], bytes]:
    frames = [encode_frame(Enqueue(t, "q", t, b"y", 3)) for t in range(first, first + count)]
    return {"type": "append", "term": 3, "first": first, "count": count}, b"".join(frames)


def _deliver(follower: Follower, first: int, count: int, now: float) -> None:
    header, payload = _append(first, count)
    follower.on_append("n1", header, 3, payload, now)


def _reply(restore: bool) -> dict[str, Any]:
    return {"type": "sync_reply", "boundaries": [[3, 1]], "last_txid": 40, "restore": restore}


def test_an_earlier_streams_appends_wait_for_the_new_syncs_rollback() -> None:
    core = FakeCore()
    follower = Follower(cast(GroupCore, core))
    follower.on_sync_reply("n1", _reply(restore=True), 3)
    core.store.finish_rollback()  # the first stream starts at txid 1
    assert core.net.sent[-1] == {"type": "stream_from", "term": 3, "from": 1}
    _deliver(follower, 1, 4, 1.0)
    assert core.store.applied == [[1, 2, 3, 4]]
    # No stream listed by the master for a while: the replica syncs again, and gets a full
    # copy again; its rollback takes a while on the reactor.
    follower.forget()
    follower.on_sync_reply("n1", _reply(restore=True), 3)
    _deliver(follower, 5, 3, 2.0)  # the first stream's next batch
    assert core.store.applied == [[1, 2, 3, 4]], "applied on top of a log being emptied"
    core.store.finish_rollback()
    assert core.net.sent[-1] == {"type": "stream_from", "term": 3, "from": 1}
    _deliver(follower, 1, 3, 3.0)  # the new stream, from the start
    assert core.store.applied == [[1, 2, 3, 4], [1, 2, 3]]
    _deliver(follower, 2, 4, 3.1)  # overlapping: only what is new
    assert core.store.applied[-1] == [4, 5]


def test_a_forgotten_stream_applies_nothing_until_it_syncs_again() -> None:
    core = FakeCore()
    follower = Follower(cast(GroupCore, core))
    _deliver(follower, 1, 2, 1.0)  # no sync yet
    follower.on_sync_reply("n1", _reply(restore=False), 3)
    _deliver(follower, 6, 2, 1.5)  # before the rollback is done
    assert core.store.applied == []
    core.store.finish_rollback()
    _deliver(follower, 1, 2, 2.0)
    assert core.store.applied == [[1, 2]]
