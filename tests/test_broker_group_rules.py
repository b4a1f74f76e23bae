"""broker_ref's group rules one by one: election, durability and acknowledgements, divergence."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from broker_ref.config import parse_config
from broker_ref.durability import AckPolicy, SyncPolicy, parse_durability
from broker_ref.election import Ballot, SelfElection, Voter, majority
from broker_ref.errors import ConfigError
from broker_ref.frame_log import FrameLog, term_in
from broker_ref.group import Group
from broker_ref.oplog import OperationalLog
from broker_ref.records import Enqueue, encode_frame

# ---- the election rules (seed: "Behaviour of the Group") ----------------------------------------


def _voter(**changes: Any) -> Voter:
    base = dict(
        name="n2",
        last_txid=10,
        last_term=1,
        priority=1,
        group_size=3,
        quorum_override=0,
        designated_primary=False,
        master_recently_seen=False,
    )
    base.update(changes)
    return Voter(**base)  # type: ignore[arg-type]


def _ballot(**changes: Any) -> Ballot:
    base = dict(candidate="n1", term=2, last_txid=10, last_term=1, priority=1)
    base.update(changes)
    return Ballot(**base)  # type: ignore[arg-type]


def test_the_node_with_the_most_recent_transaction_wins() -> None:
    rules = SelfElection()
    assert rules.grants(_voter(last_txid=10), _ballot(last_txid=11))
    assert not rules.grants(_voter(last_txid=12), _ballot(last_txid=11))
    assert not rules.grants(_voter(last_term=2, last_txid=5), _ballot(last_term=1, last_txid=50))


def test_priority_breaks_a_tie() -> None:
    rules = SelfElection()
    assert not rules.grants(_voter(priority=3), _ballot(priority=1))
    assert rules.grants(_voter(priority=1), _ballot(priority=2))
    assert rules.grants(_voter(priority=2), _ballot(priority=2))


def test_priority_never_does_not_stand_but_votes_even_for_an_older_node() -> None:
    rules = SelfElection()
    assert not rules.may_stand(_voter(priority=0))
    assert rules.may_stand(_voter(priority=1))
    assert rules.grants(_voter(priority=0, last_txid=99), _ballot(last_txid=10))


def test_a_live_master_is_not_deposed_except_by_a_transfer() -> None:
    rules = SelfElection()
    assert not rules.grants(_voter(master_recently_seen=True), _ballot(last_txid=50))
    assert rules.grants(_voter(master_recently_seen=True, priority=3), _ballot(transfer=True))


def test_votes_needed_majority_override_designated_primary() -> None:
    rules = SelfElection()
    assert [majority(n) for n in (1, 2, 3, 5)] == [1, 2, 2, 3]
    assert rules.votes_needed(_voter(group_size=3)) == 2
    assert rules.votes_needed(_voter(group_size=3, quorum_override=1)) == 1
    assert rules.votes_needed(_voter(group_size=2)) == 2
    assert rules.votes_needed(_voter(group_size=2, designated_primary=True)) == 1


# ---- durability and acknowledgements ----------------------------------------------------------


def test_durability_triplets_parse_and_refuse_nonsense() -> None:
    d = parse_durability("sync,write_no_sync,all")
    assert (d.master_sync, d.replica_sync, d.ack_policy) == (
        SyncPolicy.SYNC,
        SyncPolicy.WRITE_NO_SYNC,
        AckPolicy.ALL,
    )
    for bad in ("SYNC,SYNC", "FAST,SYNC,ALL", "SYNC,SYNC,MOST"):
        with pytest.raises(ValueError):
            parse_durability(bad)


def _config(tmp_path: Path, **extra: Any) -> Any:
    raw = {
        "name": "n1",
        "amqp_port": 1001,
        "management_port": 1002,
        "replication_port": 1003,
        "data_dir": str(tmp_path),
        "peers": {"n2": "127.0.0.1:2003", "n3": "127.0.0.1:3003"},
    }
    raw.update(extra)
    return parse_config(raw)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"durability": "SYNC,NO_SYNC,ALL"}, "cannot be combined with coalescing"),
        ({"priority": 4}, "priority"),
        ({"quorum_override": 4}, "quorum_override"),
        ({"designated_primary": True}, "group of two"),
        ({"permitted_nodes": ["n1"]}, "permitted_nodes"),
        ({"peers": {"n2": "nowhere"}}, "host:port"),
    ],
)
def test_config_refuses_what_the_seeds_forbid(
    tmp_path: Path, extra: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        _config(tmp_path, **extra)


class _NoStore:
    def __getattr__(self, name: str) -> Callable[..., None]:
        return lambda *args, **kwargs: None


def _group(tmp_path: Path, **extra: Any) -> Group:
    log = OperationalLog("n1", io.StringIO())
    return Group(_config(tmp_path, **extra), log, FrameLog(), _NoStore())  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("durability", "override", "needed"),
    [
        ("NO_SYNC,NO_SYNC,SIMPLE_MAJORITY", 0, 1),
        ("NO_SYNC,NO_SYNC,ALL", 0, 2),
        ("NO_SYNC,NO_SYNC,NONE", 0, 0),
        ("NO_SYNC,NO_SYNC,SIMPLE_MAJORITY", 1, 0),
        ("NO_SYNC,NO_SYNC,SIMPLE_MAJORITY", 3, 2),
    ],
)
def test_acknowledgements_a_commit_waits_for(
    tmp_path: Path, durability: str, override: int, needed: int
) -> None:
    group = _group(tmp_path, durability=durability, quorum_override=override)
    assert group.acks_needed() == needed


def test_a_designated_primary_out_of_contact_commits_alone(tmp_path: Path) -> None:
    group = _group(tmp_path, peers={"n2": "127.0.0.1:2003"}, designated_primary=True)
    assert group.acks_needed() == 0
    group.contact.in_contact.add("n2")
    assert group.acks_needed() == 1


# ---- where a rejoining node's history diverged -------------------------------------------------


def _log(terms: list[int]) -> FrameLog:
    log = FrameLog()
    for txid, term in enumerate(terms, start=1):
        log.append(txid, term, encode_frame(Enqueue(txid, "q", txid, b"m", term)))
    return log


def test_term_boundaries_and_the_common_prefix(tmp_path: Path) -> None:
    master = _log([1, 1, 1, 3, 3])
    assert master.boundaries() == [(1, 1), (3, 4)]
    assert [term_in(master.boundaries(), 5, t) for t in range(7)] == [None, 1, 1, 1, 3, 3, None]
    group = _group(tmp_path)
    group.core.frames = _log([1, 1, 1, 2, 2, 2])  # was master in term 2; the others moved on
    assert group.follower._common_prefix(master.boundaries(), master.last_txid) == 3
    group.core.frames = _log([1, 1])  # simply behind
    assert group.follower._common_prefix(master.boundaries(), master.last_txid) == 2
    dropped = group.core.frames.truncate_after(1)
    assert dropped == 1 and group.core.frames.last_txid == 1
