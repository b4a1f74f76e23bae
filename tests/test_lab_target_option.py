"""The pytest plugin's `--lab-target` and `--lab-mode`: scenario tests against another target
or HA design, those it cannot run skipped with the one line `lab run` refuses them with, and
`lab_deviation` on a declared deviation (reproduced: xfail; not seen: a warning, or a
failure with --lab-strict-deviations). Nothing here starts a node: every refusal comes
before anything starts, and the deviations are fakes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lab.cli.main import main
from lab.pytest_plugin import DEFAULT_SEED
from lab.targets.suite import SUITE_INDEX, read_index

pytest_plugins = ("pytester",)

USES_LAB_RUN = "def test_it(lab_run):\n    lab_run(NAME)\n"
BROKER_J = (["--lab-target", "qpid-broker-j"], ["--target", "qpid-broker-j"])


def _cli_refusal(capsys: pytest.CaptureFixture[str], tmp_path: Path, *argv: str) -> str:
    """The one line `lab run` refuses this combination with (exit 2), without `lab: error: `."""
    assert main(["run", *argv, "--seed", "1", "--runs-dir", str(tmp_path / "cli")]) == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("lab: error: ")
    return last.removeprefix("lab: error: ")


def _skip_reason(result: pytest.RunResult) -> str:
    (line,) = [x for x in result.outlines if x.startswith("SKIPPED [1] ")]
    return line.split(": ", 1)[1]


@pytest.mark.parametrize(
    ("scenario", "options", "cli"),
    [
        # a group Broker-J cannot form: the cluster's check
        ("primary-failure", *BROKER_J),
        # a fault the cluster cannot apply (slowing node→node links): the schedule's preflight
        ("durability-matrix", *BROKER_J),
        # a durability Broker-J does not offer
        ("replica-gc-stall-all", *BROKER_J),
        # a scenario without a twin in the other HA design
        ("quorum-loss", ["--lab-mode", "active-passive"], ["--mode", "active-passive"]),
    ],
)  # fmt: skip
def test_a_scenario_the_target_cannot_run_is_skipped_with_the_clis_reason(
    scenario: str,
    options: list[str],
    cli: list[str],
    pytester: pytest.Pytester,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    said = _cli_refusal(capsys, tmp_path, scenario, *cli)
    pytester.makepyfile(USES_LAB_RUN.replace("NAME", repr(scenario)))
    runs = tmp_path / "kept"
    result = pytester.runpytest("-rs", "-s", *options, "--lab-runs-dir", str(runs))
    result.assert_outcomes(skipped=1)
    assert _skip_reason(result) == said
    (entry,) = read_index(runs / SUITE_INDEX)
    assert entry["refused"] == said and entry["scenario"] == scenario
    assert not (runs / "test_it").exists()  # nothing ran


def test_the_target_and_mode_default_to_broker_ref_and_the_scenarios_own(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        "def test_it(lab_target, lab_mode):\n    print(f'TARGET={lab_target} MODE={lab_mode}')\n"
    )
    pytester.runpytest("-s").stdout.fnmatch_lines(["*TARGET=broker_ref MODE=None*"])
    chosen = pytester.runpytest(
        "-s", "--lab-target", "qpid-broker-j", "--lab-mode", "active-passive"
    )
    chosen.stdout.fnmatch_lines(["*TARGET=qpid-broker-j MODE=active-passive*"])
    wrong = pytester.runpytest("--lab-target", "qpid-broker-c")
    assert wrong.ret == pytest.ExitCode.USAGE_ERROR
    wrong.stderr.fnmatch_lines(
        ["*--lab-target qpid-broker-c: unknown target 'qpid-broker-c' (known: broker_ref, *"]
    )
    versionless = pytester.runpytest("--lab-target", "broker_ref@1.0")
    assert versionless.ret == pytest.ExitCode.USAGE_ERROR
    versionless.stderr.fnmatch_lines(["*'broker_ref' has no versions to choose from: drop @1.0*"])


def test_several_targets_run_each_test_once_on_each(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        "import pytest\n"
        "@pytest.mark.parametrize('name', ['a', 'b'])\n"
        "def test_it(name, lab_target, request):\n"
        "    assert request.node.name == f'test_it[{name}-{lab_target}]'\n"
        "def test_without_the_lab():\n    pass\n"
    )
    both = pytester.runpytest("--lab-target", "broker_ref,x@1")
    assert both.ret == pytest.ExitCode.USAGE_ERROR  # an unknown target among them
    both = pytester.runpytest("-v", "--lab-target", "broker_ref,qpid-broker-j@9.1.0")
    both.assert_outcomes(passed=5)
    both.stdout.fnmatch_lines(  # one scenario on every target, then the next
        [
            "*test_it?a-broker_ref? PASSED*",
            "*test_it?a-qpid-broker-j@9.1.0? PASSED*",
            "*test_it?b-broker_ref? PASSED*",
            "*test_it?b-qpid-broker-j@9.1.0? PASSED*",
            "*test_without_the_lab PASSED*",
        ]
    )


FAKE_OUTCOME = """
import pytest
from types import SimpleNamespace
import datetime as dt
from lab.judge.deviations import Deviation, DeviationOutcome, Matcher
from lab.judge.seen_rates import SeenRate

DECLARED = Deviation("J3-x", "replica-failure", "p", "stalls for 5 s", "e", "c", Matcher())
ONE_IN_FIVE = SeenRate("process", 1, 5, dt.date(2026, 11, 26))


def _outcome(status, before=()):
    matched = DECLARED if status == "reproduced" else None
    found = DeviationOutcome(status, "f.toml", (DECLARED,), matched, before=before)
    return SimpleNamespace(
        spec=SimpleNamespace(scenario="replica-failure", backend="process", target="broker_ref",
                             group=SimpleNamespace(mode="replicated-group", target_context={})),
        judgement=SimpleNamespace(deviation=lambda scenario, backend, mode, settings: found),
        verdict=SimpleNamespace(violations=("unavailable>bound",)),
    )


def test_reproduced(lab_deviation):
    lab_deviation(_outcome("reproduced"))
    raise AssertionError("not reached: a reproduced deviation ends the test")


def test_not_seen(lab_deviation):
    lab_deviation(_outcome("not seen"))


def test_not_seen_as_before(lab_deviation):
    lab_deviation(_outcome("not seen", before=(("J3-x", ONE_IN_FIVE),)))


def test_unmatched_is_left_to_the_test(lab_deviation):
    lab_deviation(_outcome("unmatched"))
"""


def test_a_reproduced_deviation_is_an_expected_failure_and_one_not_seen_is_loud(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(FAKE_OUTCOME)
    result = pytester.runpytest("-rxX")
    # One DeviationNotSeen warning; pytest's own (assert rewriting in a session that has
    # imported the lab already) vary with the order the tests ran in, and are not counted.
    # A held run whose declaration was seen 1 in 5 before is listed quietly: no warning.
    result.assert_outcomes(passed=3, xfailed=1)
    assert result.stdout.str().count("DeviationNotSeen: declared deviation not seen") == 1
    result.stdout.fnmatch_lines(
        [
            "*DeviationNotSeen: declared deviation not seen: fixed upstream? (J3-x, declared*",
            "*lab: declared deviations*",
            "*test_not_seen: declared deviation not seen: fixed upstream?*",
            "*test_not_seen_as_before: declared deviation not seen, as in earlier sessions"
            " (J3-x 1/5 on process (2026-11-26); declared in f.toml)",
            "*test_reproduced: deviation reproduced: J3-x*",
            "XFAIL*test_reproduced*deviation reproduced: J3-x (*): stalls*(unavailable>bound)",
        ]
    )
    strict = pytester.runpytest("--lab-strict-deviations")
    strict.assert_outcomes(passed=2, xfailed=1, failed=1)
    strict.stdout.fnmatch_lines(["E * Failed: declared deviation not seen: fixed upstream?*"])


def test_the_index_names_the_test_and_what_it_asked_for(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    pytester.makepyfile(
        "def test_it(lab_run):\n    lab_run('primary-failure', target='qpid-broker-j')\n"
    )
    pytester.runpytest("--lab-runs-dir", str(tmp_path)).assert_outcomes(skipped=1)
    (line,) = (tmp_path / SUITE_INDEX).read_text().splitlines()
    entry = json.loads(line)
    assert entry.pop("test").endswith(
        "test_the_index_names_the_test_and_what_it_asked_for.py::test_it"
    )
    assert entry == {
        "scenario": "primary-failure",
        "target": "qpid-broker-j",
        "target_version": "9.2.1",  # the version it would have run
        "backend": "process",
        "mode": "",
        "seed": DEFAULT_SEED,
        "refused": entry["refused"],
        "load": entry["load"],  # the machine's 1-minute load average, as the line was written
    }
    assert isinstance(entry["load"], float)
    assert entry["refused"].startswith("Apache Qpid Broker-J has no active-passive mode")


WRITTEN_HERE = """
from pathlib import Path
from lab.api import Prediction, Scenario, Topology, fault_window, scheduled

FOUR = Scenario(
    name="four-nodes", summary="s", prediction=Prediction("p"),
    schedule=scheduled(fault_window("kill", "@master", 1.0, 1.0, "f1")),
    topology=Topology(nodes=4),
)


def test_a_scenario_object(lab_run):
    lab_run(FOUR)


def test_an_incident_file(lab_run):
    incident = Path("four.toml")
    incident.write_text("[topology]\\nnodes = 4\\n")
    lab_run(incident)
"""


def test_lab_run_takes_a_scenario_object_and_an_incident_file(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    """Refused as `lab run` refuses them (broker_ref forms no group of four), before
    anything starts; what a session keeps names them."""
    pytester.makepyfile(WRITTEN_HERE)
    runs = tmp_path / "kept"
    result = pytester.runpytest("-rs", "--lab-runs-dir", str(runs))
    result.assert_outcomes(skipped=2)
    entries = read_index(runs / SUITE_INDEX)
    assert {e["scenario"] for e in entries} == {"four-nodes", "four"}
    assert {e["refused"] for e in entries} == {"broker_ref runs groups of 1, 2, 3, 5 nodes, not 4"}
