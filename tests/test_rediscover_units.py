"""`lab bench rediscover` without a broker: its request, the match of a losing run with the
published loss scenarios (made from the run's own events, never known to the campaign), and
the campaign's target settings reaching every run it makes."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from lab.bench.rediscover import RediscoverRequest, Trial, headline, rediscover_request
from lab.bench.rediscover_match import match_run
from lab.campaign.candidates import seed_spec
from lab.campaign.plan import CampaignRequest, Cell
from lab.campaign.tasks import Task
from lab.ground.errors import UsageError

NS = 1_000_000_000


def _args(**given: object) -> argparse.Namespace:
    base: dict[str, object] = dict(
        target="rabbitmq", setting=["queue-type=mirrored"], generators=None, trials=None,
        budget=None, control=False, seed=None, shrink_budget=None, page=None,
        control_setting=None,
    )  # fmt: skip
    return argparse.Namespace(**{**base, **given})


def test_the_request_takes_the_targets_settings_and_defaults() -> None:
    request = rediscover_request(_args())
    assert request.settings == (("queue-type", "mirrored"),)
    assert (request.budget_s, request.trials, request.generators) == (
        600.0,
        3,
        ("random", "coverage"),
    )


def test_a_control_setting_changes_the_campaigns_settings_for_the_control() -> None:
    request = rediscover_request(
        _args(setting=["queue-type=mirrored", "partition-handling=autoheal"],
              control_setting=["queue-type=quorum"])
    )  # fmt: skip
    assert request.control
    assert request.control_given == (("partition-handling", "autoheal"), ("queue-type", "quorum"))
    assert request.control_name == "partition-handling=autoheal queue-type=quorum"
    assert rediscover_request(_args(control=True)).control_name == "rabbitmq's defaults"


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ({"target": "broker_ref"}, "runs against a real broker"),
        ({"generators": "random,blind"}, "unknown generator 'blind'"),
        ({"trials": 0}, "--trials 0: at least one"),
        ({"setting": ["queue-type"]}, "write KEY=VALUE"),
    ],
)
def test_a_bad_request_is_one_line(given: dict[str, object], says: str) -> None:
    with pytest.raises(UsageError, match=says):
        rediscover_request(_args(**given))


def _run(tmp_path: Path, events: list[dict[str, object]], acks: dict[str, float]) -> Path:
    folder = tmp_path / "run"
    folder.mkdir()
    lines = [
        {"time": int(t * NS), "process": "p1", "type": "ok", "f": "send", "value": v}
        for v, t in acks.items()
    ]
    (folder / "history.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    (folder / "events.jsonl").write_text("\n".join(json.dumps(e) for e in events) + "\n")
    lost = {"count": len(acks), "ids": sorted(acks)}
    (folder / "result.json").write_text(json.dumps({"check": {"lost": lost}}))
    return folder


def _event(kind: str, at: float, node: str | None = None, **more: object) -> dict[str, object]:
    return {"v": 1, "time": int(at * NS), "kind": kind, "node": node, **more}


def test_a_mirror_that_rejoined_after_the_loss_and_was_promoted_is_an_unsynchronised_promotion(
    tmp_path: Path,
) -> None:
    events = [
        _event("node.start", 0.1, "n2"),
        _event("node.start", 9.0, "n2"),  # restarted: rejoins empty
        _event("broker.log", 30.0, "n2", code="MST-1006", text="Promoting mirror"),
    ]
    match = match_run(_run(tmp_path, events, {"p1-3": 4.0, "p1-4": 5.0}))
    assert match.scenario == "unsynchronised-promotion"
    assert "n2 started at 9.0 s" in match.evidence


def test_a_loss_during_a_partition_that_was_healed_is_a_discarded_side(tmp_path: Path) -> None:
    events = [
        _event("node.start", 0.1, "n1"),
        _event("fault.start", 10.0, None, fault="isolate", target="n1"),
        _event("broker.log", 26.0, "n1", code="RMQ-1004", text="Autoheal: we were selected"),
    ]
    match = match_run(_run(tmp_path, events, {"p1-50": 15.0}))
    assert match.scenario == "partition-discarded"
    assert "RMQ-1004 on n1" in match.evidence


def test_a_healing_before_the_partition_explains_nothing_of_it(tmp_path: Path) -> None:
    events = [
        _event("node.start", 0.1, "n2"),
        _event("node.role", 1.0, "n2", role="MASTER"),
        _event("broker.log", 5.0, "n2", code="RMQ-1003", text="Cluster minority"),
        _event("node.role", 5.0, "n2", role="WAITING"),
        _event("fault.start", 8.0, None, fault="isolate", target="n1"),
    ]
    match = match_run(_run(tmp_path, events, {"p1-70": 10.0}))
    assert match.scenario == "other"
    assert "while no node was master" in match.evidence


def test_a_loss_nothing_explains_is_other(tmp_path: Path) -> None:
    events = [_event("node.start", 0.1, "n1"), _event("broker.log", 2.0, "n1", code="MST-1006")]
    assert match_run(_run(tmp_path, events, {"p1-1": 5.0})).scenario == "other"


def test_the_headline_gives_found_and_median_minutes_per_generator_and_the_control() -> None:
    request = RediscoverRequest("rabbitmq", (("queue-type", "mirrored"),), trials=2, control=True)
    trials = [
        Trial("random", 1, 1, False, 4, True, minutes=3.0),
        Trial("random", 2, 2, False, 9, False),
        Trial("coverage", 1, 1, False, 2, True, minutes=1.0),
        Trial("coverage", 2, 2, False, 3, True, minutes=2.0),
        *(Trial(g, k, k, True, 6, False) for g in ("random", "coverage") for k in (1, 2)),
    ]
    assert headline(request, trials) == (
        "rediscover rabbitmq queue-type=mirrored: random 1/2 (median 3.0 min), coverage 2/2 "
        "(median 1.5 min); control (rabbitmq's defaults) random 0/2, coverage 0/2 lost within "
        "10 min"
    )


def test_a_campaigns_target_settings_reach_every_run_it_makes() -> None:
    request = CampaignRequest(
        budget_s=60.0, seed=1, targets=("rabbitmq",), settings=(("queue-type", "mirrored"),)
    )
    (cell,), _ = request.cells()
    assert cell.settings == (("queue-type", "mirrored"),)
    assert seed_spec(cell, 7).group.target_context == {"rabbitmq": {"queue-type": "mirrored"}}
    argv = Task(1, cell, 7).argv(Path("/tmp/c"))
    assert "--target-setting=queue-type=mirrored" in argv


def test_a_cell_without_settings_is_as_before() -> None:
    assert str(Cell("random", "broker_ref", "process", "replicated-group")) == (
        "random · broker_ref · process · replicated-group"
    )
