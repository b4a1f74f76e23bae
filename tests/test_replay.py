"""`lab replay RUN --times N`: the recorded spec run again, with an honest outcome — held
k/N, reproduced k/N, or "did not reproduce" (exit 4) when the original violation never
comes back. Replays compare violation kinds, not counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_lab

from lab.judge.result import ReplayOf

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
