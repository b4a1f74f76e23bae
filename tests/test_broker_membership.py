"""A broker_ref group's membership changes as the seed's node operations say: a newcomer
is added through the master, a stopped node is removed for good and its name cannot be
reused, and only members' votes and acknowledgements count (broker_ref/membership.py)."""

from __future__ import annotations

import json
import signal
from collections.abc import Callable
from pathlib import Path

import pytest
from group_helpers import LocalGroup, until

from broker_ref.config import parse_config
from broker_ref.errors import ConfigError, StoreError
from broker_ref.membership import Membership, load_membership, save_membership

# -- the value and its file ---------------------------------------------------------------


def test_a_membership_grows_and_shrinks_one_version_at_a_time() -> None:
    first = Membership(0, ("n1", "n2"))
    grown = first.admit("n3", term=4)
    assert grown == Membership(1, ("n1", "n2", "n3"), (), 4)
    assert grown.admit("n3", term=5) is grown  # already a member: no new version
    shrunk = grown.remove("n2", term=6)
    assert shrunk == Membership(2, ("n1", "n3"), ("n2",), 6)
    with pytest.raises(ValueError, match=r"'n2' was removed .* cannot be reused"):
        shrunk.admit("n2", term=7)
    with pytest.raises(KeyError):
        shrunk.remove("n2", term=7)


def test_a_later_term_outranks_a_higher_version() -> None:
    made_by_dead_master = Membership(2, ("n1", "n2", "n3"), (), term=5)
    made_by_next_master = Membership(1, ("n1", "n2"), ("n4",), term=6)
    assert made_by_next_master.newer_than(made_by_dead_master)
    assert not made_by_dead_master.newer_than(made_by_next_master)
    assert Membership(2, ("n1",), (), 6).newer_than(made_by_next_master)
    assert not made_by_next_master.newer_than(made_by_next_master)


@pytest.mark.parametrize(
    "raw",
    [
        None,
        [],
        {"members": ["n1"]},
        {"version": -1, "members": ["n1"]},
        {"version": True, "members": ["n1"]},
        {"version": 1, "term": "2", "members": ["n1"]},
        {"version": 1, "members": "n1"},
        {"version": 1, "members": ["n1", 2]},
        {"version": 1, "members": ["n1"], "removed": [None]},
    ],
)
def test_what_is_not_a_membership_is_refused(raw: object) -> None:
    assert Membership.parse(raw) is None


def test_the_saved_membership_is_read_back_and_a_damaged_one_refused(tmp_path: Path) -> None:
    first = Membership(0, ("n1", "n2", "n3"))
    assert load_membership(tmp_path, first) is first  # a new node: its configured members
    saved = first.remove("n3", term=2)
    save_membership(tmp_path, saved)
    assert load_membership(tmp_path, first) == saved
    assert Membership.parse(saved.message()) == saved
    (tmp_path / "membership.json").write_text('{"version": "x"}')
    with pytest.raises(StoreError, match="not a membership"):
        load_membership(tmp_path, first)
    (tmp_path / "membership.json").write_text("{")
    with pytest.raises(StoreError, match="cannot read"):
        load_membership(tmp_path, first)


def _config(**extra: object) -> dict[str, object]:
    return {
        "name": "n3",
        "amqp_port": 5672,
        "management_port": 8080,
        "data_dir": "/tmp/d",
        "replication_port": 7000,
        "peers": {"n1": "127.0.0.1:7001", "n2": "127.0.0.1:7002"},
        **extra,
    }


def test_the_configured_members_are_checked() -> None:
    assert parse_config(_config()).members == ()  # every node
    assert parse_config(_config(members=["n2", "n1"])).members == ("n1", "n2")
    for bad, why in (
        ([], "non-empty list"),
        (["n1", "n9"], "non-empty list of n3, n1, n2"),
        ("n1", "non-empty list"),
        (["n1", "n1"], "twice"),
    ):
        with pytest.raises(ConfigError, match=why):
            parse_config(_config(members=bad))


# -- real node processes ------------------------------------------------------------------


def _txid(group: LocalGroup, node: str) -> int:
    status, body = group.request(node)
    return int(body["lastKnownReplicationTransactionId"]) if status == 200 else -1


def _members_seen_by(group: LocalGroup, node: str) -> list[str]:
    return sorted(r["name"] for r in group.request(node, what="remotereplicationnode")[1])


def _delete(group: LocalGroup, at: str, node: str) -> tuple[int, object]:
    """DELETE /api/latest/remotereplicationnode/<at>/<node> on `at`."""
    return group.request(at, "DELETE", what="remotereplicationnode", path_tail=node)


@pytest.mark.processes
def test_a_newcomer_is_added_catches_up_and_its_acknowledgements_count(
    make_group: Callable[..., LocalGroup],
) -> None:
    group = make_group(3, start=False, all={"members": ["n1", "n2"]})
    group.start("n1")
    group.start("n2")
    master = group.master()
    group.send(master, 20, "before")
    group.start("n3")
    roles = group.wait_for(lambda r: r.get("n3") == "REPLICA")
    assert roles[master] == "MASTER"
    assert "HA-1003 : Added : Node : 'n3'" in group.oplog(master)
    other = next(n for n in ("n1", "n2") if n != master)
    until(lambda: group.oplog(other), lambda log: "HA-1003 : Added : Node : 'n3'" in log)
    assert _members_seen_by(group, master) == sorted({"n1", "n2", "n3"} - {master})
    until(lambda: _txid(group, "n3"), lambda t: t == _txid(group, master))
    saved = json.loads((group.root / "n3" / "data" / "membership.json").read_text())
    assert saved["members"] == ["n1", "n2", "n3"]
    # With the other first member gone, the master commits on the newcomer's
    # acknowledgement alone: 2 of 3 members. (In the group of two it could not.)
    group.kill(other)
    group.send(master, 5, "after")
    assert group.roles()[master] == "MASTER"


@pytest.mark.processes
def test_a_stopped_node_is_removed_for_good_and_its_name_refused(
    make_group: Callable[..., LocalGroup],
) -> None:
    group = make_group(3)
    master = group.master()
    gone, last = (n for n in ("n1", "n2", "n3") if n != master)
    status, body = _delete(group, gone, last)
    assert status == 409 and "is not the master" in body["errorMessage"]
    status, body = _delete(group, master, gone)
    assert status == 409 and f"node '{gone}' is active" in body["errorMessage"]
    status, body = _delete(group, master, master)
    assert status == 409 and "cannot remove itself" in body["errorMessage"]
    assert _delete(group, master, "n9")[0] == 404
    group.procs[gone].send_signal(signal.SIGTERM)  # stopped as an operator stops it
    group.procs[gone].wait(timeout=30)
    status, body = until(lambda: _delete(group, master, gone), lambda r: r[0] != 409)
    assert status == 200, body
    assert f"HA-1004 : Removed : Node : '{gone}'" in group.oplog(master)
    assert _members_seen_by(group, master) == [last]
    assert _delete(group, master, gone)[0] == 404  # no longer a member
    group.send(master, 5, "two-left")
    # Started again, the removed node learns it is out and takes no part.
    group.start(gone)
    until(lambda: group.oplog(gone), lambda log: "REF-1011 : Removed from group" in log)
    assert group.wait_for(lambda r: r.get(gone) == "DETACHED")[master] == "MASTER"
    # The group is the master and `last` now: without `last` it has no quorum, though the
    # master still hears from the removed node (in a group of three it would keep one).
    group.kill(last)
    until(lambda: group.roles().get(master), lambda role: role == "WAITING")
    assert "HA-1009" in group.oplog(master)
    assert group.roles()[gone] == "DETACHED"
