"""Near misses (lab.campaign.danger) from hand-written timelines, and what the guide's corpus
makes of them: a run that came close weighs more, joins the corpus, and pays."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

from lab.campaign.corpus import Corpus, Entry
from lab.campaign.danger import Send, danger_of, danger_score, signs
from lab.campaign.plan import Cell
from lab.ground.spec import RunSpec

S = 1_000_000_000
CELL = Cell("random", "broker_ref", "process", "replicated-group")


def _e(t: float, kind: str, node: str | None = None, **fields: Any) -> dict[str, Any]:
    return {"v": 1, "time": int(t * S), "kind": kind, "node": node, **fields}


def _start(t: float, fid: str, fault: str, target: str, **more: Any) -> dict[str, Any]:
    return _e(t, "fault.start", id=fid, fault=fault, target=target, **more)


def _cluster(*more: dict[str, Any]) -> list[dict[str, Any]]:
    base = [
        _e(0.1, "node.start", "n1"),
        _e(0.1, "node.start", "n2"),
        _e(0.1, "node.start", "n3"),
        _e(0.5, "node.role", "n1", role="MASTER"),
        _e(0.6, "node.role", "n2", role="REPLICA"),
        _e(0.6, "node.role", "n3", role="REPLICA"),
        _e(1.0, "workload.phase", phase="load"),
    ]
    return sorted([*base, *more], key=lambda e: e["time"])


def _sends(node: str, *times: tuple[float, float]) -> list[Send]:
    return [Send(node, int(a * S), int(b * S)) for a, b in times]


def test_a_master_acknowledging_while_cut_off_is_a_near_miss() -> None:
    events = _cluster(_start(3.0, "f1", "isolate", "n1"), _e(6.0, "fault.end", id="f1"))
    in_flight = _sends("n1", (2.95, 3.1))  # sent before the cut: not counted
    alone = _sends("n1", (4.0, 4.01), (4.5, 4.52), (5.0, 5.01))
    after = _sends("n1", (6.5, 6.6))
    found = signs(events, in_flight + alone + after, 0.6)
    assert found == {"danger:acked-while-cut-off:2-3"}
    # The same sends with no cut: nothing.
    assert signs(_cluster(), in_flight + alone + after, 0.6) == frozenset()


def test_acknowledgements_sooner_than_every_slowed_link_allows() -> None:
    slow = [
        _start(2.0, f"l{i}", "latency", f"n1_to_{n}", params={"latency_ms": 200, "jitter_ms": 0})
        for i, n in enumerate(("n2", "n3"))
    ]
    events = _cluster(*slow, _e(9.0, "fault.end", id="l0"), _e(9.0, "fault.end", id="l1"))
    quick = _sends("n1", (3.0, 3.05), (4.0, 4.1))  # 50 and 100 ms: no replica answered
    patient = _sends("n1", (5.0, 5.45))  # 450 ms: room for a round trip
    assert signs(events, quick + patient, 0.6) == {"danger:acked-faster-than-links:2-3"}
    # One link slowed only: a quick ack may come from the other replica.
    one = _cluster(slow[0], _e(9.0, "fault.end", id="l0"))
    assert signs(one, quick, 0.6) == frozenset()


def test_two_masters_longer_than_the_election_timeout_and_acks_by_the_deposed_one() -> None:
    events = _cluster(
        _start(2.0, "f1", "isolate", "n1"),
        _e(2.8, "node.role", "n2", role="MASTER"),
        _e(4.5, "node.role", "n1", role="REPLICA"),
        _e(5.0, "fault.end", id="f1"),
    )
    deposed = _sends("n1", (3.5, 3.6))  # n1 still says master, n2 elected at 2.8 s
    found = signs(events, deposed, 0.6)
    assert "danger:masters-overlap:1-2s" in found
    assert "danger:acked-by-deposed-master:1" in found
    # A short overlap (the old master stepping down within its lease) is not one.
    brief = _cluster(
        _start(2.0, "f1", "isolate", "n1"),
        _e(2.8, "node.role", "n2", role="MASTER"),
        _e(3.0, "node.role", "n1", role="REPLICA"),
    )
    assert not any(s.startswith("danger:masters-overlap") for s in signs(brief, [], 0.6))


def test_a_master_cut_off_that_keeps_its_role_too_long() -> None:
    roles = {"n1": "MASTER", "n2": "REPLICA", "n3": "REPLICA"}
    slow = _cluster(
        _start(2.0, "f1", "isolate", "n1", roles=roles),
        _e(4.6, "node.role", "n1", role="WAITING"),
        _e(6.0, "fault.end", id="f1"),
    )
    assert "danger:slow-step-down:2-4s" in signs(slow, [], 0.6)
    prompt = _cluster(
        _start(2.0, "f1", "isolate", "n1", roles=roles),
        _e(2.7, "node.role", "n1", role="WAITING"),
        _e(6.0, "fault.end", id="f1"),
    )
    assert not any(s.startswith("danger:slow-step-down") for s in signs(prompt, [], 0.6))


def test_a_killed_or_frozen_master_is_not_a_second_master() -> None:
    events = _cluster(
        _start(2.0, "f1", "pause", "n1"),
        _e(3.0, "node.role", "n2", role="MASTER"),
        _e(6.0, "fault.end", id="f1"),
        _e(6.1, "node.role", "n1", role="REPLICA"),
    )
    assert signs(events, [], 0.6) == frozenset()


def test_replicas_trailing_a_killed_master() -> None:
    events = _cluster(
        _start(3.0, "f1", "kill", "n1", roles={"n1": "MASTER", "n2": "REPLICA", "n3": "REPLICA"}),
        _e(3.0, "node.txid", "n1", fault="f1", moment="before", txid=120),
        _e(3.0, "node.txid", "n2", fault="f1", moment="before", txid=100),
        _e(3.0, "node.txid", "n3", fault="f1", moment="before", txid=90),
    )
    assert signs(events, [], 0.6) == {"danger:lag-at-master-kill:16-31"}
    replica_killed = _cluster(
        _start(3.0, "f1", "kill", "n2", roles={"n1": "MASTER", "n2": "REPLICA", "n3": "REPLICA"}),
        _e(3.0, "node.txid", "n1", fault="f1", moment="before", txid=120),
        _e(3.0, "node.txid", "n2", fault="f1", moment="before", txid=100),
    )
    assert signs(replica_killed, [], 0.6) == frozenset()


def test_promotions_beside_a_catching_up_backup_or_not_ready() -> None:
    first = _e(0.4, "manager.promote", "n1", statuses={"n1": "joining", "n2": "joining"})
    later = _e(
        5.0, "manager.promote", "n2", statuses={"n1": "down", "n2": "catchup", "n3": "catchup"}
    )
    assert signs(_cluster(first), [], 0.6) == frozenset()  # the cluster's first: by design
    assert signs(_cluster(first, later), [], 0.6) == {
        "danger:promoted-not-ready",
        "danger:promoted-beside-catchup",
    }


def test_a_run_folder_is_read_whole(tmp_path: Path) -> None:
    events = _cluster(_start(3.0, "f1", "isolate", "n1"), _e(6.0, "fault.end", id="f1"))
    (tmp_path / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    ops = [
        {"time": int(4.0 * S), "process": "p1", "type": "invoke", "f": "send", "seq": 1},
        {"time": int(4.1 * S), "process": "p1", "type": "ok", "f": "send", "seq": 1, "node": "n1"},
    ]
    (tmp_path / "history.jsonl").write_text("".join(json.dumps(o) + "\n" for o in ops) + '{"t')
    (tmp_path / "spec.json").write_text(json.dumps({"group": {"election_timeout_s": 0.6}}))
    assert danger_of(tmp_path) == {"danger:acked-while-cut-off:1"}
    assert danger_of(tmp_path / "missing") == frozenset()


def _entry(run: int, features: tuple[str, ...]) -> Entry:
    return Entry(run, CELL, RunSpec(scenario="random", seed=run), "fresh", None, (), None, features)


def test_the_corpus_mutates_what_came_close_most_and_pays_it() -> None:
    corpus = Corpus()
    plain, close = _entry(1, ("a", "b")), _entry(2, ("a", "c", "danger:lag-at-master-kill:1"))
    for entry in (plain, close):
        corpus.seen(entry.features, 2)
        corpus.add(entry)
    picks = Counter(corpus.pick(random.Random(n)).run for n in range(300))
    assert picks[2] > 2 * picks[1]
    assert danger_score(close.features) == 1
    # Nothing new, but as close as any recent run: it pays; nothing new and not close: not.
    assert corpus.paid(0, 30.0, danger=1)
    assert not corpus.paid(0, 30.0, danger=0)
