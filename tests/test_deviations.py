"""Known deviations as data (lab.judge.deviations): the matcher's vocabulary, the file's
checks, the outcome of a run against its declarations, result.json's verdict `deviation`,
`lab run`'s exit status, Allure's categories and the verdict table, all with fakes."""

from __future__ import annotations

import datetime as dt
import json
import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from lab.ground.errors import InputError
from lab.ground.nodes import TargetTraits
from lab.judge.check_result import CheckResult, IdSet
from lab.judge.deviations import (
    NOT_SEEN_AS_BEFORE,
    NOT_SEEN_WARNING,
    Condition,
    Declarations,
    Deviation,
    DeviationNotSeen,
    DeviationOutcome,
    Matcher,
    assess,
    load_declarations,
    parse_declarations,
)
from lab.judge.metrics import RunMetrics, Window
from lab.judge.prediction import Prediction, Verdict
from lab.judge.result import RESULT_VERSION, Judgement, ReplayOf, RunResult
from lab.judge.run_observation import Observation
from lab.judge.seen_rates import SeenRate
from lab.reporting.allure_categories import categories_of, violation_kinds, write_categories
from lab.targets.brokerj.target import DEVIATIONS
from lab.targets.catalog import make_target
from lab.targets.protocol import traits_of
from scenarios.catalog import SCENARIOS, scenario_named

J3 = Matcher(
    violations=("unavailable>bound",), check=(("lost", Condition.parse("0")),),
    longest_gap_s=Condition.parse(">=3"),
)  # fmt: skip
J8 = Matcher(
    violations=("log-missing",),
    check=(("lost", Condition.parse(">0")),),
    codes_absent=("HA-1014",),
    log_contains=("RollbackProhibitedException",),
)


def _seen(**overrides: Any) -> Observation:
    base: dict[str, Any] = {
        "outcome": "broken",
        "violations": ("unavailable>bound",),
        "counts": {"lost": 0, "acknowledged": 300},
        "longest_gap_s": 5.5,
    }
    return Observation(**{**base, **overrides})


def _deviation(id_: str, match: Matcher, scenario: str = "replica-failure", **kw: Any) -> Deviation:
    return Deviation(id_, scenario, "predicted", "observed", "evidence", "lab run …", match, **kw)


@pytest.mark.parametrize(
    ("text", "x", "holds"),
    [("0", 0, True), ("0", 1, False), (">0", 1, True), (">0", 0, False), (">=3", 3, True),
     ("<2.5", 2.4, True), ("<=2", 3, False), ("!=0", 0, False), (5, 5, True), ("==1", 1, True)],
)  # fmt: skip
def test_a_condition_compares_with_a_number(text: object, x: float, holds: bool) -> None:
    assert Condition.parse(text).holds(x) is holds


@pytest.mark.parametrize("text", ["", "> zero", "=>3", "1-2", True, None, [1]])
def test_a_condition_that_does_not_parse_says_so(text: object) -> None:
    with pytest.raises(ValueError, match="is not a condition"):
        Condition.parse(text)


def test_the_matcher_matches_and_says_why_not() -> None:
    assert J3.mismatches(_seen()) == ()
    assert J3.mismatches(_seen(outcome="held", violations=())) == (
        "verdict held, not broken",
        "no unavailable>bound violation",
    )
    # a loss beside the declared stall is never masked by the declaration
    lost = _seen(violations=("lost", "unavailable>bound"), counts={"lost": 4})
    assert J3.mismatches(lost) == ("undeclared violation lost", "lost 4, declared 0")
    assert J3.mismatches(_seen(longest_gap_s=2.2)) == ("longest gap 2.20 s, declared >=3",)
    assert Matcher(allow=("log-missing",)).mismatches(_seen(violations=("log-missing",))) == ()


def test_the_matcher_reads_log_codes_and_log_text() -> None:
    j8 = _seen(violations=("log-missing",), counts={"lost": 153})
    found = frozenset({"RollbackProhibitedException"})
    assert J8.mismatches(Observation(**{**j8.__dict__, "log_found": found})) == ()
    assert J8.mismatches(j8) == ("no log line with 'RollbackProhibitedException'",)
    logged = Observation(**{**j8.__dict__, "log_found": found, "codes": frozenset({"HA-1014"})})
    assert J8.mismatches(logged) == ("HA-1014 was logged",)
    needs = Matcher(violations=("log-missing",), codes_seen=("MST-1006",))
    assert needs.mismatches(j8) == ("no MST-1006 in the logs",)


def test_assess_gives_each_outcome() -> None:
    stall, other = _deviation("J3", J3), _deviation("J3b", Matcher(violations=("lost",)))
    assert assess((), _seen(), "f.toml") is None
    reproduced = assess((other, stall), _seen(), "f.toml")
    assert reproduced is not None and reproduced.reproduced and reproduced.matched == stall
    assert reproduced.line() == "deviation reproduced: J3 (declared in f.toml)"
    not_seen = assess((stall,), _seen(outcome="held", violations=()), "f.toml")
    assert not_seen is not None and not_seen.status == "not seen"
    assert not_seen.line().startswith(NOT_SEEN_WARNING)
    assert not_seen.to_json()["warning"] == NOT_SEEN_WARNING
    unmatched = assess((stall,), _seen(counts={"lost": 2}), "f.toml")
    assert unmatched is not None and unmatched.status == "unmatched"
    assert unmatched.to_json()["mismatches"] == {"J3": ["lost 2, declared 0"]}


def test_a_held_run_is_quiet_when_earlier_sessions_on_its_backend_held_too() -> None:
    day = dt.date(2026, 11, 26)
    held = _seen(outcome="held", violations=())
    rare = _deviation(
        "C1", J3, seen=(SeenRate("process", 1, 5, day), SeenRate("docker", 5, 5, day))
    )
    always = _deviation("C3", J3, seen=(SeenRate("process", 5, 5, day),))
    quiet = assess((rare,), held, "f.toml", "process")
    assert quiet is not None and quiet.status == "not seen" and not quiet.loud
    assert (
        quiet.line() == f"{NOT_SEEN_AS_BEFORE} (C1 1/5 on process (2026-11-26); declared in f.toml)"
    )
    assert quiet.to_json()["warning"] == NOT_SEEN_AS_BEFORE
    assert quiet.to_json()["seen_before"] == {"C1": "1/5"}
    # seen every time on this backend, no rate for it, or one declaration always seen: loud
    for declared, backend in (((rare,), "docker"), ((always,), "process"), ((rare,), "ssh")):
        loud = assess(declared, held, "f.toml", backend)
        assert loud is not None and loud.loud and loud.line().startswith(NOT_SEEN_WARNING)
    both = assess((rare, always), held, "f.toml", "process")
    assert both is not None and both.loud
    assert both.to_json()["seen_before"] == {"C1": "1/5", "C3": "5/5"}
    unrated = assess((rare,), held, "f.toml")  # no backend given: nothing to compare with
    assert unrated is not None and unrated.loud and "seen_before" not in unrated.to_json()


def test_a_declaration_applies_to_its_scenario_backends_and_modes() -> None:
    docker_only = _deviation("J4", J3, "partition-and-recovery", backends=("docker",))
    found = Declarations("qpid-broker-j", "f.toml", (docker_only, _deviation("J3", J3)))
    assert found.for_run("partition-and-recovery", "process", "replicated-group") == ()
    assert found.for_run("partition-and-recovery", "docker", "replicated-group") == (docker_only,)
    assert [d.id for d in found.for_run("replica-failure", "process", "x")] == ["J3"]


def test_a_declaration_for_some_target_settings_applies_with_them_given_or_by_default() -> None:
    quorum = _deviation("Q", J3, settings=(("activation", "quorum-voting"),))
    lock = _deviation("L", J3, settings=(("activation", "lock-manager"),))
    found = Declarations("artemis", "f.toml", (quorum, lock))
    defaults = (("activation", "lock-manager"),)
    judged = Judgement(Prediction("p"), _check(), _metrics(5.5), Verdict("broken", ()))
    assert found.for_run("replica-failure", "process", "x", {"activation": "quorum-voting"}) == (
        quorum,
    )
    assert found.for_run("replica-failure", "process", "x", dict(defaults)) == (lock,)
    assert found.for_run("replica-failure", "process", "x") == ()
    seen = replace_judgement(judged, found, defaults)
    assert seen.deviation("replica-failure", "process", "x", None).matched is lock  # type: ignore[union-attr]
    given = seen.deviation("replica-failure", "process", "x", {"activation": "quorum-voting"})
    assert given is not None and given.matched is quorum
    entry = _raw()["deviation"][0]
    with_settings = {**_raw(), "deviation": [{**entry, "settings": {"activation": "q"}}]}
    parsed = parse_declarations(with_settings, "f.toml")
    assert parsed.deviations[0].settings == (("activation", "q"),)
    with pytest.raises(ValueError, match="settings must be a table of strings"):
        parse_declarations({**_raw(), "deviation": [{**entry, "settings": {"voters": 3}}]}, "f")


def replace_judgement(
    judged: Judgement, found: Declarations, defaults: tuple[tuple[str, str], ...]
) -> Judgement:
    return Judgement(
        judged.prediction, judged.check, judged.metrics, judged.verdict, found, _seen(), defaults
    )


def _raw(**match: Any) -> dict[str, Any]:
    entry = {
        "id": "J3", "scenario": "replica-failure", "predicted": "p", "observed": "o",
        "evidence": "e", "command": "c", "match": {"violations": ["unavailable>bound"], **match},
    }  # fmt: skip
    return {"target": "qpid-broker-j", "deviation": [entry]}


def test_the_file_is_checked_key_by_key() -> None:
    parsed = parse_declarations(_raw(check={"lost": "0"}), "f.toml").deviations[0]
    assert parsed.match.check == (("lost", Condition("=", 0.0)),)
    assert parsed.match.verdicts == ("broken",)
    for bad, says in [
        (_raw(lost="0"), "unknown key 'lost'"),
        (_raw(check={"lots": "0"}), "unknown key 'lots'"),
        (_raw(verdicts=["held"]), "verdicts"),
        (_raw(check={"lost": "many"}), "not a condition"),
        ({**_raw(), "targets": "x"}, "unknown key 'targets'"),
        ({"target": "t", "deviation": [_raw()["deviation"][0]] * 2}, "declared twice"),
        ({"target": "t", "deviation": [{"id": "x"}]}, "'scenario' must be"),
    ]:
        with pytest.raises(ValueError, match=says):
            parse_declarations(bad, "f.toml")


def test_a_file_that_cannot_be_read_is_one_input_error(tmp_path: Path) -> None:
    path = tmp_path / "deviations.toml"
    path.write_text('target = "t"\n[[deviation]]\nid = "x"\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"deviations.toml: deviation 1: 'scenario'"):
        load_declarations(path)
    path.write_text("target = \n", encoding="utf-8")
    with pytest.raises(InputError, match=r"deviations\.toml"):
        load_declarations(path)


def test_broker_js_declarations_name_real_scenarios_and_kinds() -> None:
    found = load_declarations(DEVIATIONS)
    assert found.target == "qpid-broker-j" == make_target("qpid-broker-j").name
    assert found.source == "lab/targets/brokerj/deviations.toml"
    assert traits_of(make_target("qpid-broker-j")).deviations == str(DEVIATIONS)
    assert traits_of(make_target("broker_ref")).deviations is None
    kinds = set(violation_kinds())
    ids = {d.id for d in found.deviations}
    assert {"J3-designated-primary-stalls", "J8-loss-without-HA-1014"} <= ids
    for d in found.deviations:
        assert d.scenario in SCENARIOS, d.id
        assert set(d.match.violations) | set(d.match.allow) <= kinds, d.id
        assert "lost" not in d.match.allow, d.id  # loss is declared by counts, never allowed
        assert d.command.startswith(".venv/bin/lab run ") and "qpid-broker-j" in d.command


def _check(lost: int = 0) -> CheckResult:
    def none() -> IdSet:
        return IdSet(0, ())

    return CheckResult(
        lost == 0, 300, 300, 0, 0, 300 - lost,
        IdSet(lost, tuple(f"m{i}" for i in range(lost))), none(), none(), none(), none(), 0,
    )  # fmt: skip


def _metrics(gap: float) -> RunMetrics:
    windows = (Window(10.0, 10.0 + gap),) if gap else ()
    return RunMetrics(
        0, 300, 300, 30.0, 1.0, 31.0, 10.0, 1.0, windows, gap, gap, (), (), False
    )  # fmt: skip


def test_an_observation_gathers_counts_gap_codes_and_log_text(tmp_path: Path) -> None:
    (tmp_path / "nodes" / "n2").mkdir(parents=True)
    (tmp_path / "nodes" / "n2" / "broker.log").write_text(
        "x\ncom.sleepycat.je.rep.RollbackProhibitedException: manual intervention\n"
    )
    (tmp_path / "nodes" / "n2" / "history.log").write_text("LogWriteException\n")  # not a log
    events = [{"kind": "broker.log", "code": "MST-1006"}, {"kind": "node.role", "code": "X"}]
    seen = Observation.gather(
        Verdict("broken", ("r",), ("log-missing",)), _check(153), _metrics(6.5), events,
        tmp_path, ("RollbackProhibitedException", "LogWriteException"),
    )  # fmt: skip
    assert seen.counts["lost"] == 153 and seen.counts["acknowledged"] == 300
    assert seen.longest_gap_s == 6.5
    assert seen.codes == frozenset({"MST-1006"})
    assert seen.log_found == frozenset({"RollbackProhibitedException"})


def _judged(gap: float, lost: int = 0, outcome: str = "broken") -> RunResult:
    spec = scenario_named("replica-failure").spec(7, target=TargetTraits("qpid-broker-j"))
    kinds = ("unavailable>bound",) if outcome == "broken" else ()
    verdict = Verdict(outcome, ("service was interrupted",) if kinds else (), kinds)  # type: ignore[arg-type]
    check, metrics = _check(lost), _metrics(gap)
    declared = load_declarations(DEVIATIONS)
    seen = Observation.gather(verdict, check, metrics, [], None)
    judgement = Judgement(Prediction("p"), check, metrics, verdict, declared, seen)
    return RunResult.judged(spec, judgement, "lab run …")


def test_result_json_says_deviation_and_which_declaration() -> None:
    raw = _judged(25.4).to_json()
    assert raw["v"] == RESULT_VERSION == 4
    assert raw["verdict"] == "deviation" and raw["violations"] == ["unavailable>bound"]
    assert raw["deviation"]["outcome"] == "reproduced"
    assert raw["deviation"]["id"] == "J3-designated-primary-stalls"
    assert raw["deviation"]["source"] == "lab/targets/brokerj/deviations.toml"
    broken = _judged(25.4, lost=3).to_json()  # a loss is not the declared stall
    assert broken["verdict"] == "broken" and broken["deviation"]["outcome"] == "unmatched"
    held = _judged(0.0, outcome="held").to_json()
    assert held["verdict"] == "held" and held["deviation"]["warning"] == NOT_SEEN_WARNING
    plain = RunResult.judged(
        scenario_named("master-failure").spec(7),
        Judgement(Prediction("p"), _check(), _metrics(0), Verdict("held", ())),
        "lab run …",
    ).to_json()
    assert "deviation" not in plain


def test_a_replay_of_a_deviation_repeats_a_broken_prediction(tmp_path: Path) -> None:
    (tmp_path / "result.json").write_text(json.dumps(_judged(25.4).to_json()))
    original = ReplayOf.read(tmp_path)
    assert (original.verdict, original.violations) == ("broken", ("unavailable>bound",))
    assert original.reproduced("deviation", ("unavailable>bound",))


def _fake_outcome(tmp_path: Path, held: bool) -> Any:
    spec = scenario_named("replica-failure").spec(7, target=TargetTraits("qpid-broker-j"))
    check, metrics = _check(), _metrics(25.4 if not held else 0.0)
    outcome = "held" if held else "broken"
    kinds = () if held else ("unavailable>bound",)
    verdict = Verdict(outcome, kinds, kinds)  # type: ignore[arg-type]
    seen = Observation.gather(verdict, check, metrics, [], None)
    judgement = Judgement(
        Prediction("p"), check, metrics, verdict, load_declarations(DEVIATIONS), seen
    )
    return SimpleNamespace(
        spec=spec, judgement=judgement, verdict=verdict, folder=SimpleNamespace(path=tmp_path),
        summary=f"replica-failure seed=7: prediction {outcome}", reproduce="lab run …",
    )  # fmt: skip


@pytest.mark.parametrize(("held", "status", "says"), [(False, 5, "deviation reproduced"),
                                                      (True, 0, NOT_SEEN_WARNING)])  # fmt: skip
def test_lab_run_exits_5_on_a_deviation_and_warns_when_it_is_not_seen(
    held: bool, status: int, says: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    import lab.run.runner
    from lab.cli.runs import _execute

    fake = _fake_outcome(tmp_path, held)
    monkeypatch.setattr(lab.run.runner, "run_scenario", lambda *a, **k: fake)
    assert _execute(fake.spec, SimpleNamespace(), tmp_path) == status  # type: ignore[arg-type]
    out, err = capsys.readouterr()
    summary = out.splitlines()[1]
    assert summary.startswith("replica-failure seed=7: prediction ") and says in summary
    assert (f"lab: WARNING: {NOT_SEEN_WARNING}" in err) is held


def test_allure_sorts_a_reproduced_deviation_into_its_own_category(tmp_path: Path) -> None:
    message = (
        "XFAIL deviation reproduced: J3-designated-primary-stalls (declared in f.toml): "
        "observed (('unavailable>bound',))\n\nXFailed"
    )
    assert categories_of("skipped", message) == ("deviation reproduced",)
    assert categories_of("passed", message) == ()
    strict = f"Failed: {NOT_SEEN_WARNING} (J3, declared in f.toml)"
    assert categories_of("failed", strict) == ("declared deviation not seen",)
    names = [c["name"] for c in json.loads(write_categories(tmp_path).read_text())]
    assert names[:2] == ["deviation reproduced", "declared deviation not seen"]


def test_a_broken_declaration_file_refuses_the_run_before_anything_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from lab.cli.main import main
    from lab.targets.brokerj.target import BrokerJTarget

    broken = tmp_path / "deviations.toml"
    text = DEVIATIONS.read_text(encoding="utf-8")
    first = text.index("[[deviation]]")
    broken.write_text(text + text[first : text.index("[[deviation]]", first + 1)])
    monkeypatch.setattr(BrokerJTarget, "deviations_file", broken)
    runs = tmp_path / "runs"
    argv = ["run", "master-failure", "--target", "qpid-broker-j", "--runs-dir", str(runs)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("lab: error:") and "is declared twice" in err[-1]
    assert not list(runs.rglob("*"))  # no run folder, nothing written


def test_lab_run_does_not_warn_of_a_deviation_earlier_sessions_also_missed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import lab.run.runner
    from lab.cli.runs import _execute

    fake = _fake_outcome(tmp_path, held=True)
    rare = (("J3-designated-primary-stalls", SeenRate("process", 2, 5, dt.date(2026, 11, 26))),)
    declared = load_declarations(DEVIATIONS).deviations[:1]
    quiet = DeviationOutcome("not seen", "f.toml", declared, before=rare)
    fake.judgement = SimpleNamespace(deviation=lambda *a: quiet)
    monkeypatch.setattr(lab.run.runner, "run_scenario", lambda *a, **k: fake)
    assert _execute(fake.spec, SimpleNamespace(), tmp_path) == 0  # type: ignore[arg-type]
    out, err = capsys.readouterr()
    assert NOT_SEEN_AS_BEFORE in out.splitlines()[1] and "WARNING" not in err


def test_a_held_run_of_a_declared_deviation_warns_under_the_suites_warnings_as_errors() -> None:
    """The suite turns warnings from the lab's own modules into errors (pyproject.toml); the
    warning that a declared deviation was not seen must stay a warning (lab_deviation fails
    only with --lab-strict-deviations). Issued as from a scenario test's module."""
    code = "import warnings\nwarnings.warn(Warned('fixed upstream?'))"
    with warnings.catch_warnings(record=True) as seen:
        exec(code, {"__name__": "scenarios.test_scenarios", "Warned": DeviationNotSeen})
    assert [type(w.message) for w in seen] == [DeviationNotSeen]
