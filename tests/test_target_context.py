"""A scenario's settings for one target (the group settings' `target_context`), and the
events a target logs without a code of its own read as broker_ref's code for them: J13 on
Broker-J needs JE's small log files, and its network restore is an uncoded WARN line."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_lab

from lab.ground.errors import UsageError
from lab.ground.nodes import BROKER_REF_TRAITS, ClusterPlan, NodePlan, TargetTraits
from lab.ground.spec import Durability, GroupSettings, RunSpec
from lab.judge.expectations import LogSeen
from lab.judge.facts import LogLine, RunFacts
from lab.targets.broker_ref import BrokerRefTarget
from lab.targets.brokerj.config import initial_config
from lab.targets.brokerj.target import LAB_EVENTS, BrokerJTarget, parse_brokerj_line
from lab.targets.log_lines import LogRecord
from lab.targets.management import Credentials
from lab.targets.protocol import traits_of
from scenarios.catalog import scenario_named

RESTORE = (
    "2026-11-24T04:52:18.445 WARN [n2] The log files of this node are too old. "
    "Network restore will begin now."
)
JE_FILES = {"qpid-broker-j": {"je.log.fileMax": "1000000"}}


def _plan(tmp_path: Path, settings: GroupSettings) -> ClusterPlan:
    nodes = tuple(
        NodePlan(f"n{i}", 5000 + i, 6000 + i, 7000 + i, tmp_path / f"n{i}", tmp_path)
        for i in (1, 2, 3)
    )
    return ClusterPlan("lab", nodes, Durability(), settings=settings)


def _context(tmp_path: Path, settings: GroupSettings) -> dict[str, str]:
    cluster = _plan(tmp_path, settings)
    address_of = {p.name: f"127.0.0.1:{p.replication_port}" for p in cluster.nodes}
    config = initial_config(
        cluster, cluster.nodes[0], Credentials(), bind_host="127.0.0.1", address_of=address_of
    )
    context: dict[str, str] = config["virtualhostnodes"][0]["context"]
    return context


def test_a_targets_context_reaches_its_nodes_and_wins_over_the_timings(tmp_path: Path) -> None:
    plain = _context(tmp_path, GroupSettings(rep_stream_timeout_s=1.5))
    assert "je.log.fileMax" not in plain and plain["je.rep.repStreamTimeout"] == "1500 ms"
    mine = {"je.log.fileMax": "1000000", "je.rep.repStreamTimeout": "2 s"}
    given = _context(
        tmp_path,
        GroupSettings(rep_stream_timeout_s=1.5, target_context={"qpid-broker-j": mine}),
    )
    assert given["je.log.fileMax"] == "1000000"
    assert given["je.rep.repStreamTimeout"] == "2 s"  # the scenario's own setting last
    other = GroupSettings(target_context={"another-target": {"je.log.fileMax": "5"}})
    assert "je.log.fileMax" not in _context(tmp_path, other)


def test_broker_ref_refuses_a_context_of_its_own(tmp_path: Path) -> None:
    target = BrokerRefTarget()
    target.check(_plan(tmp_path, GroupSettings(target_context=JE_FILES)))  # not its own
    with pytest.raises(UsageError, match=r"target_context\.broker_ref: broker_ref takes no"):
        target.check(_plan(tmp_path, GroupSettings(target_context={"broker_ref": {"a": "1"}})))


def test_the_context_is_in_the_spec_only_when_given() -> None:
    assert "target_context" not in GroupSettings().to_json()
    settings = GroupSettings(target_context=JE_FILES)
    assert settings.to_json()["target_context"] == JE_FILES
    assert GroupSettings.from_json(settings.to_json()) == settings
    spec = RunSpec("rejoin-after-retention", 1, group=settings)
    assert RunSpec.from_json(spec.to_json(), Path("spec.json")).group.target_context == JE_FILES


def test_j13_asks_broker_j_for_small_log_files() -> None:
    group = scenario_named("rejoin-after-retention").group
    assert group.target_context["qpid-broker-j"]["je.log.fileMax"] == "1000000"


def _seconds(duration: str) -> float:
    value, unit = duration.split()
    return float(value) * {"ms": 0.001, "s": 1.0}[unit]


@pytest.mark.parametrize("seed", range(1, 21))
def test_j5s_designated_replica_can_be_elected_within_the_partition(
    tmp_path: Path, seed: int
) -> None:
    """JE elects a designated primary alone only after a failed round (none more with
    electionsPrimaryRetries 0) and a second round, each waiting out the silent peer (its
    open and read timeouts), once the replica has given up on its master (replicaTimeout)
    and been designated. With JE's defaults (10 s timeouts, 2 retries) J5's partition
    heals first and the split brain never forms; with the context, both rounds and a
    second for the virtual host's recovery fit in every seed's partition."""
    scenario = scenario_named("split-brain")
    context = _context(tmp_path, scenario.group)
    assert context["je.rep.electionsPrimaryRetries"] == "0"
    a_round = sum(_seconds(context[f"je.rep.elections{t}Timeout"]) for t in ("Open", "Read"))
    at = {(op.id, op.action): op.at_s for op in scenario.spec(seed).schedule}
    given_up = at[("f2", "start")] + _seconds(context["je.rep.replicaTimeout"])
    elected_by = max(given_up, at[("f4", "start")]) + 2 * a_round
    assert elected_by + 1.0 <= at[("f2", "stop")]


@pytest.mark.parametrize(
    ("table", "said"),
    [
        ('target_context = "x"', "group.target_context: must be a table"),
        ('target_context = {qpid-broker-j = "x"}', "group.target_context.qpid-broker-j: must"),
        (
            'target_context = {qpid-broker-j = {"je.log.fileMax" = 1000000}}',
            "group.target_context.qpid-broker-j.je.log.fileMax: must be a string, not 1000000",
        ),
    ],
)
def test_an_incidents_bad_context_is_one_line_and_status_2(
    tmp_path: Path, table: str, said: str
) -> None:
    incident = tmp_path / "bad.toml"
    incident.write_text(
        f'scenario = "incident"\nseed = 1\n[topology]\nnodes = 3\n[group]\n{table}\n',
        encoding="utf-8",
    )
    done = run_lab("run", "--spec", str(incident), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(f"lab: error: {incident}: {said}"), line


def test_broker_js_network_restore_line_is_read_as_the_labs_code() -> None:
    record = parse_brokerj_line(RESTORE)
    assert record == LogRecord(
        "2026-11-24T04:52:18.445",
        "WARN",
        "n2",
        "REF-1004",
        "The log files of this node are too old. Network restore will begin now.",
    )
    assert parse_brokerj_line(RESTORE.replace("too old", "fine")) is None  # exact text only
    assert traits_of(BrokerJTarget()).lab_codes == frozenset(LAB_EVENTS) == {"REF-1004"}
    assert traits_of(BrokerRefTarget()).lab_codes == frozenset()


def _facts(target: TargetTraits, records: tuple[LogRecord, ...]) -> RunFacts:
    logs = tuple(LogLine(1.0, r.node, r.code, r.text) for r in records)
    return RunFacts({}, logs, {}, None, target)  # type: ignore[arg-type]


def test_a_lab_code_is_checked_on_a_target_that_reads_it_and_only_there() -> None:
    seen = LogSeen("REF-1004")
    restore = parse_brokerj_line(RESTORE)
    assert restore is not None
    brokerj = TargetTraits("qpid-broker-j", lab_codes=frozenset({"REF-1004"}))
    assert seen.unmet(_facts(brokerj, (restore,))) is None
    said = seen.unmet(_facts(brokerj, ()))
    assert said is not None and said.startswith("no REF-1004")
    blind = TargetTraits("qpid-broker-j")
    said = seen.unmet(_facts(blind, (restore,)))
    assert said is not None and said.startswith("cannot be checked:")
    assert seen.unmet(_facts(BROKER_REF_TRAITS, (restore,))) is None
