"""Group settings, durability, the broker_ref group configuration, workers and figures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lab.backends.base import group_ready
from lab.ground.errors import UsageError
from lab.ground.nodes import ClusterPlan, NodePlan, NodeStatus
from lab.ground.spec import Durability, GroupSettings, RunSpec, Workload
from lab.judge.metrics import run_metrics
from lab.run.workers import worker_plans
from lab.targets.broker_ref import check_plan, node_config
from lab.targets.management import Credentials
from scenarios.catalog import SCENARIOS

NS = 1_000_000_000


def _plan(size: int, settings: GroupSettings | None = None, **durability: Any) -> ClusterPlan:
    names = tuple(f"n{i}" for i in range(1, size + 1))
    nodes = tuple(
        NodePlan(n, 1000 + i, 2000 + i, 3000 + i, Path(f"/d/{n}"), Path(f"/x/{n}"))
        for i, n in enumerate(names)
    )
    peers = {a: {b: f"127.0.0.1:{4000 + i}" for i, b in enumerate(names) if b != a} for a in names}
    return ClusterPlan("lab", nodes, Durability(**durability), peers, settings or GroupSettings())


def test_a_node_config_names_its_peers_by_their_proxies_and_carries_the_settings() -> None:
    settings = GroupSettings(priority={"n3": 0}, rep_stream_timeout_s=2.0)
    plan = _plan(3, settings, ack_policy="ALL", coalescing_sync=False)
    config = node_config(plan, plan.node("n3"), Credentials("u", "p"))
    assert config["peers"] == {"n1": "127.0.0.1:4000", "n2": "127.0.0.1:4001"}
    assert config["permitted_nodes"] == ["n1", "n2", "n3"]
    assert config["priority"] == 0
    assert node_config(plan, plan.node("n1"), Credentials())["priority"] == 1
    assert config["durability"] == "NO_SYNC,NO_SYNC,ALL"
    assert config["coalescing_sync"] is False
    assert config["rep_stream_timeout_s"] == 2.0
    assert config["replication_port"] == 3002
    assert (config["management_user"], config["management_password"]) == ("u", "p")


def test_a_single_node_has_no_peers() -> None:
    plan = _plan(1)
    assert node_config(plan, plan.node("n1"), Credentials())["peers"] == {}


@pytest.mark.parametrize(
    ("size", "settings"),
    [
        (4, GroupSettings()),
        (3, GroupSettings(designated_primary=("n1",))),
        (2, GroupSettings(designated_primary=("n1", "n2"))),
        (3, GroupSettings(priority={"n7": 2})),
        (3, GroupSettings(priority={"n1": 4})),
        (3, GroupSettings(quorum_override=4)),
    ],
)
def test_groups_broker_ref_cannot_form_are_refused(size: int, settings: GroupSettings) -> None:
    with pytest.raises(UsageError):
        check_plan(_plan(size, settings))


@pytest.mark.parametrize("size", [1, 2, 3, 5])
def test_groups_of_one_two_three_and_five(size: int) -> None:
    check_plan(_plan(size))


def test_durability_parses_the_seeds_triplets_and_refuses_sync_with_coalescing() -> None:
    assert Durability.parse("write_no_sync, no_sync, all", False) == Durability(
        "WRITE_NO_SYNC", "NO_SYNC", "ALL", False
    )
    with pytest.raises(UsageError, match="cannot be used"):
        Durability.parse("SYNC,SYNC,ALL")
    for bad in ("NO_SYNC,NO_SYNC", "FAST,NO_SYNC,ALL", "NO_SYNC,NO_SYNC,MOST"):
        with pytest.raises(UsageError):
            Durability.parse(bad)


def test_a_spec_with_group_settings_round_trips_through_json() -> None:
    spec = SCENARIOS["rejoin-after-retention"].spec(5)
    spec = RunSpec(
        **{**spec.__dict__, "group": GroupSettings(priority={"n2": 3}, designated_primary=())}
    )
    again = RunSpec.from_json(spec.to_json(), source=Path("spec.json"))
    assert again == spec


def test_the_matrix_prediction_follows_the_ack_policy() -> None:
    matrix = SCENARIOS["durability-matrix"]
    none = matrix.spec(1, durability=Durability.parse("NO_SYNC,NO_SYNC,NONE"))
    majority = matrix.spec(1)
    assert matrix.prediction_for(none).loss == "detected"
    assert matrix.prediction_for(majority).loss == "none"
    assert none.durability.triplet in matrix.prediction_for(none).text


def _status(role: str | None) -> NodeStatus | None:
    return None if role is None else NodeStatus("n", role)


@pytest.mark.parametrize(
    ("roles", "ready"),
    [
        (("MASTER", "REPLICA", "REPLICA"), True),
        (("MASTER",), True),
        (("MASTER", "REPLICA", "WAITING"), False),
        (("MASTER", "MASTER", "REPLICA"), False),
        (("MASTER", "REPLICA", None), False),
        (("REPLICA", "REPLICA"), False),
    ],
)
def test_a_group_is_ready_with_one_master_and_only_replicas(
    roles: tuple[str | None, ...], ready: bool
) -> None:
    assert group_ready({f"n{i}": _status(r) for i, r in enumerate(roles)}) is ready


def _urls_of(plan_argv: tuple[str, ...]) -> tuple[str, str]:
    argv = list(plan_argv)
    return argv[argv.index("--urls") + 1], argv[argv.index("--nodes") + 1]


def test_spread_producers_start_at_different_nodes() -> None:
    urls = ["u1", "u2", "u3"]
    nodes = ("n1", "n2", "n3")
    spread = worker_plans(Workload(producers=4, spread_producers=True), urls, nodes, 0)
    by_process = {p.process: _urls_of(p.argv) for p in spread}
    assert by_process["p1"] == ("u1,u2,u3", "n1,n2,n3")
    assert by_process["p2"] == ("u2,u3,u1", "n2,n3,n1")
    assert by_process["p4"] == ("u1,u2,u3", "n1,n2,n3")
    assert by_process["c1"] == ("u1,u2,u3", "n1,n2,n3")
    plain = worker_plans(Workload(producers=2), urls, nodes, 0)
    assert {_urls_of(p.argv) for p in plain} == {("u1,u2,u3", "n1,n2,n3")}


def _history(rows: list[tuple[float, str, str | None]]) -> pa.Table:
    return pa.table(
        {
            "time": [int(t * NS) for t, _, _ in rows],
            "process": ["p1"] * len(rows),
            "type": [kind for _, kind, _ in rows],
            "f": ["send"] * len(rows),
            "value": [f"p1-{i}" for i in range(len(rows))],
            "node": [n for _, _, n in rows],
        }
    )


def _event(time_s: float, kind: str, node: str | None = None, **fields: Any) -> dict[str, Any]:
    return {"v": 1, "time": int(time_s * NS), "kind": kind, "node": node, **fields}


def test_failover_is_the_first_acknowledgement_from_another_node() -> None:
    history = _history([(1.0, "ok", "n1"), (5.2, "ok", "n1"), (6.4, "ok", "n2")])
    events = [
        _event(0.0, "node.start", "n1"),
        _event(0.0, "node.start", "n2"),
        _event(0.5, "workload.phase", phase="load"),
        _event(5.0, "fault.start", id="f1", fault="kill", target="n1"),
        _event(7.0, "fault.start", id="f2", fault="partition", target="group"),
        _event(8.0, "workload.phase", phase="heal"),
    ]
    metrics = run_metrics(history, events)
    assert metrics.failover_s == (1.4, None)
    assert (metrics.load_start_s, metrics.load_end_s) == (0.5, 8.0)


def test_a_frozen_master_is_no_master_until_it_resumes() -> None:
    history = _history([(1.0, "ok", "n1")])

    def seen(events: list[dict[str, Any]]) -> bool:
        return run_metrics(history, events).two_masters_seen

    base = [_event(1.0, "node.role", "n1", role="MASTER"), _event(2.0, "node.pause", "n1")]
    elected = [*base, _event(3.0, "node.role", "n2", role="MASTER")]
    assert not seen(elected)
    resumed = [*elected, _event(4.0, "node.resume", "n1")]
    # A resumed node's stale claim counts once the grace for its step-down report is over.
    assert not seen([*resumed, _event(4.3, "broker.log", "n2", code="HA-1005")])
    assert seen([*resumed, _event(4.6, "broker.log", "n2", code="HA-1005")])
    assert not seen(
        [*elected, _event(3.5, "node.role", "n1", role="REPLICA"), _event(4.0, "node.resume", "n1")]
    )
    assert not seen(
        [*base, _event(2.5, "node.kill", "n1"), _event(3.0, "node.role", "n2", role="MASTER")]
    )


def test_a_master_that_ended_by_itself_is_no_master() -> None:
    history = _history([(1.0, "ok", "n1")])
    claims = [_event(1.0, "node.role", "n1", role="MASTER")]
    elected = _event(3.0, "node.role", "n2", role="MASTER")
    assert run_metrics(history, [*claims, elected]).two_masters_seen
    exited = _event(2.0, "node.exit", "n1", status=1)  # a broker that shut itself down
    assert not run_metrics(history, [*claims, exited, elected]).two_masters_seen


def test_lab_run_refuses_sync_on_the_master_with_coalescing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from lab.cli.main import main

    argv = ["run", "durability-matrix", "--seed", "1", "--runs-dir", str(tmp_path)]
    assert main([*argv, "--durability", "SYNC,SYNC,ALL"]) == 2
    assert "cannot be used" in capsys.readouterr().err
    assert main([*argv, "--durability", "NO_SYNC,NO_SYNC,MAYBE", "--no-coalescing"]) == 2
    assert not any(tmp_path.iterdir())
