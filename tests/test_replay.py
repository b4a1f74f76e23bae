"""`lab replay RUN --times N`: the recorded spec run again, with an honest outcome — held
k/N, reproduced k/N, or "did not reproduce" (exit 4) when the original violation never
comes back. Replays compare violation kinds, not counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_lab

from lab.backends.docker.engine import can_install, engine_answers
from lab.judge.result import ReplayOf
from lab.pytest_plugin import skip_unless_ci

QUIET = """
scenario = "incident"
seed = 9
[topology]
nodes = 1
[workload]
producers = 1
consumers = 1
rate = 50.0
duration_s = 3.0
"""


@pytest.mark.parametrize(
    ("original", "verdict", "kinds", "reproduced"),
    [
        (("held", ()), "held", (), True),
        (("held", ()), "broken", ("lost",), False),
        (("broken", ("lost", "two-masters")), "broken", ("two-masters",), True),
        (("broken", ("lost",)), "broken", ("unavailable>bound",), False),
        (("broken", ("lost",)), "held", (), False),
        (("unknown", ("error",)), "unknown", ("error",), True),
    ],
)
def test_a_replay_reproduces_by_violation_kind(
    original: tuple[str, tuple[str, ...]], verdict: str, kinds: tuple[str, ...], reproduced: bool
) -> None:
    of = ReplayOf("runs/x/1", original[0], original[1])  # type: ignore[arg-type]
    assert of.reproduced(verdict, kinds) is reproduced  # type: ignore[arg-type]
    said = of.to_json(verdict, kinds)  # type: ignore[arg-type]
    assert said["outcome"] == ("reproduced" if reproduced else "did not reproduce")
    assert said["original"] == {"verdict": original[0], "violations": list(original[1])}


def test_an_unreadable_original_counts_as_an_error(tmp_path: Path) -> None:
    assert ReplayOf.read(tmp_path) == ReplayOf(str(tmp_path), "unknown", ("error",))
    (tmp_path / "result.json").write_text('{"verdict": "broken", "reasons": ["x"]}')
    assert ReplayOf.read(tmp_path).violations == ("unknown",)


def test_times_below_one_is_refused(tmp_path: Path) -> None:
    result = run_lab("replay", str(tmp_path), "--times", "0", cwd=tmp_path)
    assert result.returncode == 2


def _results(folder: Path) -> list[dict[str, object]]:
    return [
        json.loads(p.read_text())
        for p in sorted(folder.parent.glob("*/result.json"))
        if p.parent != folder and not p.parent.is_symlink()  # not `latest`
    ]


@pytest.mark.processes
def test_replay_says_held_and_did_not_reproduce_honestly(tmp_path: Path) -> None:
    incident = tmp_path / "quiet.toml"
    incident.write_text(QUIET, encoding="utf-8")
    first = run_lab("run", "--spec", str(incident), cwd=tmp_path, timeout=120)
    assert first.returncode == 0, first.stdout + first.stderr
    folder = tmp_path / first.stdout.splitlines()[0]

    held = run_lab("replay", str(folder), "--times", "2", cwd=tmp_path, timeout=240)
    assert held.returncode == 0, held.stdout + held.stderr
    assert held.stdout.splitlines()[-1] == "replay: held 2/2"
    replays = _results(folder)
    assert len(replays) == 2
    for result in replays:
        assert result["replay"] == {
            "of": str(folder),
            "original": {"verdict": "held", "violations": []},
            "reproduced": True,
            "outcome": "reproduced",
        }

    # The same folder, as if its run had lost acknowledged messages: a held replay does not
    # reproduce that, and says so with its own exit status.
    result_path = folder / "result.json"
    recorded = json.loads(result_path.read_text())
    result_path.write_text(json.dumps({**recorded, "verdict": "broken", "violations": ["lost"]}))
    gone = run_lab("replay", str(folder), cwd=tmp_path, timeout=120)
    assert gone.returncode == 4, gone.stdout + gone.stderr
    assert gone.stdout.splitlines()[-1] == (
        "replay: did not reproduce (0/1): the original's lost never came back"
    )
    newest = _results(folder)[-1]
    assert newest["verdict"] == "held"
    assert newest["replay"]["outcome"] == "did not reproduce"  # type: ignore[index]


def _spec_json(folder: Path) -> dict[str, object]:
    spec = json.loads((folder / "spec.json").read_text(encoding="utf-8"))
    assert isinstance(spec.pop("git_revision"), str | None)  # the checkout's, at run time
    return spec


def _planned(folder: Path) -> list[dict[str, object]]:
    lines = (folder / "schedule.jsonl").read_text(encoding="utf-8").splitlines()
    return [entry for entry in map(json.loads, lines) if entry.get("phase") == "planned"]


# Every setting off its default: a durability the scenario does not use, the other HA design
# (its own cluster manager and virtual address), and, in containers, the other backend.
# Broker-J is not among them: three JVMs per run cost minutes on two shared cores; its
# settings' round trip is tested without a JVM (test_spec_roundtrip.py).
_ELSEWHERE = [
    pytest.param(
        ("random", "--seed", "5", "--mode", "active-passive"),
        "process",
        marks=[pytest.mark.processes, pytest.mark.long],  # a long run; the docker one stays
        id="active-passive-process",
    ),
    pytest.param(
        ("single-node-crash", "--seed", "3", "--backend", "docker"),
        "docker",
        marks=pytest.mark.docker,
        id="docker",
    ),
]


@pytest.mark.parametrize(("run_args", "backend"), _ELSEWHERE)
def test_a_replay_runs_the_recorded_settings_and_schedule(
    tmp_path: Path, run_args: tuple[str, ...], backend: str
) -> None:
    if backend == "docker" and not engine_answers() and not can_install():
        skip_unless_ci("no Docker engine answers, and the lab installs one only as root on Debian")
    durability = ("--durability", "SYNC,WRITE_NO_SYNC,ALL", "--no-coalescing")
    first = run_lab("run", *run_args, *durability, cwd=tmp_path, timeout=300)
    assert first.returncode in (0, 1), first.stdout + first.stderr  # held or broken, not an error
    folder = tmp_path / first.stdout.splitlines()[0]
    original = _spec_json(folder)
    assert original["durability"] == {
        "master_sync": "SYNC",
        "replica_sync": "WRITE_NO_SYNC",
        "ack_policy": "ALL",
        "coalescing_sync": False,
    }
    assert original["backend"] == backend
    if "--mode" in run_args:
        assert original["group"]["mode"] == "active-passive"  # type: ignore[index]
    assert _planned(folder), "the original run planned no fault"

    again = run_lab("replay", str(folder), cwd=tmp_path, timeout=300)
    assert again.returncode in (0, 1, 4), again.stdout + again.stderr
    replayed = tmp_path / again.stdout.splitlines()[0]
    assert replayed != folder and replayed.parent == folder.parent
    assert _spec_json(replayed) == original
    assert _planned(replayed) == _planned(folder)
    result = json.loads((replayed / "result.json").read_text(encoding="utf-8"))
    assert result["replay"]["of"] == str(folder)
