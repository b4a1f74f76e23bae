"""A run's behaviours (lab.campaign.behaviour) from small hand-made run folders: role paths,
log codes, what followed each fault, elections, unavailability, what the clients met — and
the same behaviours when only the timings differ."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lab.campaign.behaviour import behaviour_of, fault_label
from lab.campaign.client_behaviour import count_bucket, error_class, seconds_bucket

S = 1_000_000_000


def _ev(t: float, kind: str, node: str | None = None, **fields: Any) -> dict[str, Any]:
    return {"v": 1, "time": int(t * S), "kind": kind, "node": node, **fields}


def _role(t: float, node: str, previous: str, role: str) -> dict[str, Any]:
    return _ev(t, "node.role", node, role=role, previous=previous)


ROLES = {"n1": "MASTER", "n2": "REPLICA", "n3": "REPLICA"}


def _master_killed(shift: float = 0.0, elected_after: float = 0.7) -> list[dict[str, Any]]:
    """A group of three; n1 (the master) is killed at 5 s, n2 elected, n1 back a replica."""
    t = shift
    return [
        _ev(t + 0.0, "run.start"),
        _ev(t + 0.01, "workload.phase", phase="cluster"),
        _role(t + 1.0, "n1", "WAITING", "MASTER"),
        _role(t + 1.01, "n2", "WAITING", "REPLICA"),
        _role(t + 1.02, "n3", "WAITING", "REPLICA"),
        _ev(t + 1.1, "workload.phase", phase="load"),
        _ev(t + 5.0, "fault.start", id="f1", fault="kill", target="n1", params={}, roles=ROLES),
        _ev(t + 5.0, "node.txid", "n1", fault="f1", moment="before", txid=100),
        _ev(t + 5.0, "node.txid", "n2", fault="f1", moment="before", txid=97),
        _ev(t + 5.0, "node.txid", "n3", fault="f1", moment="before", txid=100),
        _ev(t + 5.01, "node.kill", "n1", signal="SIGKILL"),
        _ev(t + 5.02, "node.txid", "n2", fault="f1", moment="after", txid=100),
        _ev(t + 5.02, "node.txid", "n3", fault="f1", moment="after", txid=100),
        _role(t + 5.5, "n2", "REPLICA", "WAITING"),
        _role(t + 5.5, "n3", "REPLICA", "WAITING"),
        _role(t + 5.0 + elected_after, "n2", "WAITING", "MASTER"),
        _role(t + 5.02 + elected_after, "n3", "WAITING", "REPLICA"),
        _ev(t + 5.8, "broker.log", "n2", code="MST-1006", text="Recovery Complete"),
        _ev(t + 7.0, "node.start", "n1", pid=2),
        _ev(t + 7.0, "fault.end", id="f1", fault="kill", target="n1"),
        _role(t + 7.4, "n1", "WAITING", "REPLICA"),
        _ev(t + 12.0, "broker.log", "n3", code="HA-1014", text="Diverged"),
        _ev(t + 14.0, "workload.phase", phase="heal"),
        _ev(t + 14.5, "workload.phase", phase="teardown"),
        _role(t + 14.6, "n2", "MASTER", "DETACHED"),
        _ev(t + 14.7, "broker.log", "n2", code="BRK-1005", text="Stopped"),
    ]


def _folder(
    root: Path,
    name: str,
    events: list[dict[str, Any]],
    result: dict[str, Any] | None = None,
    history: list[dict[str, Any]] | None = None,
) -> Path:
    folder = root / name
    folder.mkdir()
    (folder / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    if result is not None:
        (folder / "result.json").write_text(json.dumps(result))
    if history is not None:
        (folder / "history.jsonl").write_text("".join(json.dumps(o) + "\n" for o in history))
    return folder


def test_role_paths_log_codes_and_what_followed_the_fault(tmp_path: Path) -> None:
    found = behaviour_of(_folder(tmp_path, "run", _master_killed()))
    assert {
        "role:WAITING>MASTER",
        "role:REPLICA>WAITING",
        "roles:REPLICA>WAITING>MASTER",  # n2's path: elected
        "roles:MASTER>WAITING>REPLICA",  # n1's: killed as master, back as a replica
        "log:MST-1006",
        "log:HA-1014",
        "after:kill@MASTER:role:WAITING>MASTER",
        "after:kill@MASTER:log:MST-1006",
        "masters:2-3",
        "master-moves:1",
        "leaderless:0.5-1s",
        "election:most-recent",
        "lag-at:kill@MASTER:2-3",
    } <= found
    # HA-1014 came 5 s after the heal: logged, but not an answer to the kill.
    assert "after:kill@MASTER:log:HA-1014" not in found
    # The teardown's DETACHED is every run's, not a behaviour; its log codes still count.
    assert not any("DETACHED" in f for f in found)
    assert "log:BRK-1005" in found
    # What the lab did (the kill, the restart) is no behaviour of the cluster.
    assert not any(f.startswith("event:node.") for f in found)


def test_timings_alone_do_not_make_a_run_new(tmp_path: Path) -> None:
    first = behaviour_of(_folder(tmp_path, "a", _master_killed()))
    later = behaviour_of(_folder(tmp_path, "b", _master_killed(shift=3.7, elected_after=0.9)))
    assert first == later
    slower = behaviour_of(_folder(tmp_path, "c", _master_killed(elected_after=1.6)))
    assert slower - first == {"leaderless:1-2s"}


def test_an_election_won_behind_and_a_master_that_returns(tmp_path: Path) -> None:
    events = _master_killed()
    for e in events:
        if e["kind"] == "node.txid" and e["moment"] == "after" and e["node"] == "n2":
            e["txid"] = 90
    events += [
        _role(9.0, "n2", "MASTER", "WAITING"),
        _role(9.5, "n1", "REPLICA", "MASTER"),
    ]
    events.sort(key=lambda e: e["time"])
    found = behaviour_of(_folder(tmp_path, "run", events))
    assert {"election:behind", "master-returns", "master-moves:2-3"} <= found
    assert "election:most-recent" not in found


def test_no_master_at_the_end(tmp_path: Path) -> None:
    events = [e for e in _master_killed() if not (e["kind"] == "node.role" and e["time"] > 5 * S)]
    found = behaviour_of(_folder(tmp_path, "run", events))
    assert "leaderless-at-end" in found and "masters:1" in found


def test_unavailability_and_what_lasted_then(tmp_path: Path) -> None:
    result = {
        "verdict": "broken",
        "violations": ["lost"],
        "check": {
            "indeterminate": 3,
            "failed": 0,
            "recovered": {"count": 2, "ids": []},
            "duplicated": {"count": 9, "ids": []},
        },
        "metrics": {
            "unavailable_windows": [
                {"start_s": 5.1, "end_s": 6.4, "seconds": 1.3},
                {"start_s": 10.0, "end_s": 11.2, "seconds": 1.2},
            ],
            "two_masters_seen": True,
        },
    }
    found = behaviour_of(_folder(tmp_path, "run", _master_killed(), result))
    assert {
        "unavailable:2-3",
        "unavailable-longest:1-2s",
        "unavailable-during:kill@MASTER",
        "unavailable-during:no-fault",
        "verdict:broken",
        "violation:lost",
        "indeterminate:2-3",
        "failed:0",
        "recovered:2-3",
        "duplicated:8-15",
        "two-masters",
    } <= found


def test_what_the_clients_met(tmp_path: Path) -> None:
    history = [
        {"index": 0, "time": 1, "process": "p1", "type": "invoke", "f": "send", "value": "p1-1"},
        {
            "index": 1,
            "time": 2,
            "process": "p1",
            "type": "info",
            "f": "send",
            "value": "p1-1",
            "error": "connection lost",
        },
        {
            "index": 2,
            "time": 3,
            "process": "p1",
            "type": "fail",
            "f": "send",
            "value": "p1-2",
            "error": "amqp:resource-limit-exceeded: disk 93% full on n1",
        },
        {
            "index": 3,
            "time": 4,
            "process": "c1",
            "type": "ok",
            "f": "receive",
            "value": "p1-3",
            "redelivered": True,
        },
        {
            "index": 4,
            "time": 5,
            "process": "c1",
            "type": "info",
            "f": "drain",
            "value": None,
            "error": "timed out after 30 s",
        },
    ]
    found = behaviour_of(_folder(tmp_path, "run", _master_killed(), None, history))
    assert {
        "info:connection lost",
        "fail:amqp:resource-limit-exceeded",
        "redelivered:1",
        "drain:info",
    } <= found


def test_an_active_passive_timeline(tmp_path: Path) -> None:
    roles = {"n1": "MASTER", "n2": "REPLICA", "n3": "REPLICA"}
    events = [
        _ev(1.0, "node.ha", "n1", status="recovering", previous="joining"),
        _ev(1.0, "node.ha", "n1", status="active", previous="recovering"),
        _ev(1.1, "node.ha", "n2", status="catchup", previous="joining"),
        _ev(1.2, "node.ha", "n2", status="ready", previous="catchup"),
        _ev(5.0, "fault.start", id="f1", fault="pause", target="n1", params={}, roles=roles),
        _ev(5.9, "manager.promote", "n2", statuses={"n1": "down", "n2": "ready"}),
        _ev(5.9, "node.ha", "n2", status="recovering", previous="ready"),
        _ev(
            6.0,
            "fault.start",
            id="f2",
            fault="latency",
            target="client_vip",
            params={"latency_ms": 50, "jitter_ms": 0},
            roles=roles,
        ),
        _ev(7.0, "fault.end", id="f1", fault="pause", target="n1"),
    ]
    found = behaviour_of(_folder(tmp_path, "run", events))
    assert {
        "ha:joining>recovering",
        "has:joining>recovering>active",
        "has:joining>catchup>ready",
        "event:manager.promote",
        "after:pause@MASTER:event:manager.promote",
        "after:pause@MASTER:ha:ready>recovering",
    } <= found
    assert not any(f.startswith("after:latency:vip:") and "promote" in f for f in found)


def test_an_empty_folder_shows_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    assert behaviour_of(folder) == frozenset()


def test_fault_labels_name_the_role_their_target_had() -> None:
    def label(fault: str, target: str, **params: Any) -> str:
        return fault_label({"fault": fault, "target": target, "params": params, "roles": ROLES})

    assert label("kill", "n2") == "kill@REPLICA"
    assert label("cut", "client_to_n1") == "cut:client@MASTER"
    assert label("latency", "n2_to_n1") == "latency:REPLICA>MASTER"
    assert label("partition", "group", sides="n1|n2,n3") == "partition@MASTER"
    assert label("one_way_partition", "group", sides="n2,n3|n1") == "one_way_partition:in@MASTER"
    assert label("one_way_partition", "group", sides="n3|n1,n2") == "one_way_partition:out@REPLICA"
    assert label("transfer_master", "n3") == "transfer_master"
    assert label("kill", "manager") == "kill@manager"
    assert fault_label({"fault": "pause", "target": "n3", "roles": {"n3": None}}) == "pause@DOWN"


def test_buckets_and_error_classes() -> None:
    assert [count_bucket(n) for n in (0, 1, 2, 3, 4, 7, 8, 63, 64, 1000)] == [
        "0",
        "1",
        "2-3",
        "2-3",
        "4-7",
        "4-7",
        "8-15",
        "32-63",
        "64+",
        "64+",
    ]
    assert [seconds_bucket(s) for s in (0.1, 0.5, 1.9, 3.0, 7.99, 9.0)] == [
        "<0.5s",
        "0.5-1s",
        "1-2s",
        "2-4s",
        "4-8s",
        "8s+",
    ]
    assert error_class("Timed out after 30 s waiting for p1-77") == "timed out after"
    assert error_class("link detached: 12 left") == "link detached: #"
    assert error_class("amqp:not-found: queue lab") == "amqp:not-found"


def test_a_heal_is_an_action_and_a_restarted_node_booting_answers_nothing(
    tmp_path: Path,
) -> None:
    events = [
        *_master_killed(),
        _ev(7.1, "broker.log", "n1", code="MST-1001", text="Created"),  # n1 booting
        _ev(7.2, "broker.log", "n2", code="HA-1005", text="Joined : Node : 'n1'"),
        _ev(7.6, "broker.log", "n1", code="REF-1005", text="Rolled back 3 transactions"),
    ]
    events.sort(key=lambda e: e["time"])
    found = behaviour_of(_folder(tmp_path, "run", events))
    assert {
        "after:kill@MASTER:healed:role:WAITING>REPLICA",  # n1 back, as a replica
        "after:kill@MASTER:healed:log:HA-1005",  # n2 saw it join
        "after:kill@MASTER:healed:log:REF-1005",  # n1, up and reporting, rolled back
        "log:MST-1001",
    } <= found
    assert not any(f.endswith(":log:MST-1001") and f.startswith("after:") for f in found)
