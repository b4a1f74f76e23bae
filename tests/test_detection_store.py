"""The detection benchmark's store without a campaign: trials appended and read back whole; a
page counts only the current generator version's trials of one budget and of bugs whose
code is unchanged, the latest of a repeated trial, and says how many it left out and why;
the generator's version is a hash of the files that decide schedules; `--from-store` makes
the page from hand-written trials and refuses what would run campaigns."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import ROOT, run_lab
from detection_helpers import trial

from lab.bench.detection_results import NamedResult, ShrinkResult
from lab.bench.detection_store import Stamp, TrialStore, latest_budget, select
from lab.bench.detection_version import GENERATOR_SOURCES, generator_files, generator_version
from lab.bench.zoo import load_zoo
from lab.ground.errors import InputError, UsageError

STAMP = Stamp("g-current", "abc123", 600.0, "lab bench detection --budget 600s", "vm")
DIGESTS = {"a": "da", "b": "db"}


def test_a_trial_is_read_back_as_it_was_stored(tmp_path: Path) -> None:
    store = TrialStore(tmp_path / "store")
    kept = trial("a", "coverage", 2, 1.5, canary=True, reached=0.2, triggered=1.1, faults=7)
    kept = replace(kept, folder="/tmp/scratch/run", kinds=("lost", "duplicated"), run_seed=5)
    store.append(kept, STAMP, "da")
    store.append(ShrinkResult("a", "coverage", "shrunk", (40, 6), (18.0, 7.5), 3), STAMP, "da")
    store.append(NamedResult("a", "master-failure", "J1", "broken", ("lost",)), STAMP, "da")
    records = store.read()
    assert [r["record"] for r in records] == ["trial", "shrink", "named"]
    assert records[0]["version"] == "g-current" and records[0]["commit"] == "abc123"
    assert "folder" not in records[0]["result"]  # a scratch folder is gone once it ends
    chosen = select(records, "g-current", 600.0, DIGESTS)
    assert chosen.cells == (replace(kept, folder=None),)
    assert chosen.shrinks[0].operations == (40, 6) and chosen.named[0].kinds == ("lost",)
    assert chosen.left_out == {} and chosen.left_out_text() == "none left out"
    assert chosen.commits == ("abc123",) and chosen.machines == ("vm",)


def test_only_the_current_version_budget_and_bug_code_count(tmp_path: Path) -> None:
    store = TrialStore(tmp_path)
    store.append(trial("a", "random", 1, 2.0), STAMP, "da")
    store.append(trial("a", "random", 2, None), replace(STAMP, version="g-older"), "da")
    store.append(trial("a", "random", 3, None), replace(STAMP, budget_s=120.0), "da")
    store.append(trial("b", "random", 1, None), STAMP, "db-before-it-changed")
    store.append(trial("gone", "random", 1, None), STAMP, "dg")
    store.append(trial(None, "random", 1, None), STAMP, None)  # the control
    chosen = select(store.read(), "g-current", 600.0, DIGESTS)
    assert [(c.bug, c.trial) for c in chosen.cells] == [("a", 1), (None, 1)]
    assert chosen.left_out == {
        "trial(s) of another generator version (g-older)": 1,
        "trial(s) of another budget (2 min)": 1,
        "trial(s) of a bug whose code changed since": 1,
        "trial(s) of a bug no longer in the zoo": 1,
    }
    assert chosen.left_out_text().startswith("4 left out: ")
    assert latest_budget(store.read()[:3], "g-current") == 120.0  # the latest trial's
    assert latest_budget(store.read(), "g-current") == 600.0
    assert latest_budget(store.read(), "g-none") is None


def test_a_trial_run_again_counts_once_the_latest_and_sets_follow_the_zoo(tmp_path: Path) -> None:
    store = TrialStore(tmp_path)
    store.append(trial("a", "random", 1, None), STAMP, "da")
    store.append(trial("a", "random", 1, 3.0), STAMP, "da")  # the same seed, later
    store.append(trial("a", "coverage", 1, 1.0), STAMP, "da")
    store.append(trial("a", "coverage", 1, None, error="lab: error: x"), STAMP, "da")
    chosen = select(store.read(), "g-current", 600.0, DIGESTS, after={"a": True})
    assert sorted((c.generator, c.minutes) for c in chosen.cells) == [
        ("coverage", 1.0),
        ("random", 3.0),
    ]
    assert all(c.after_generator for c in chosen.cells)  # marked in the zoo since
    assert chosen.left_out == {
        "trial(s) run again later (the latest counts)": 1,
        "trial(s) that failed to run again (the one that ran counts)": 1,
    }


def test_a_line_cut_short_at_the_end_is_passed_over_any_other_is_an_error(tmp_path: Path) -> None:
    store = TrialStore(tmp_path)
    store.append(trial("a", "random", 1, 2.0), STAMP, "da")
    with store.path.open("a", encoding="utf-8") as out:
        out.write('{"v": 1, "record": "trial", "res')  # the benchmark killed as it wrote
    assert len(store.read()) == 1
    store.path.write_text(store.path.read_text() + "\n" + json.dumps({"v": 1}) + "\n")
    with pytest.raises(InputError, match=r"trials.jsonl:2: not a stored record"):
        store.read()
    assert TrialStore(tmp_path / "none").read() == []


def test_a_store_that_cannot_be_written_is_refused_before_anything_runs(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(UsageError, match=r"--store .*file/store: cannot write"):
        TrialStore(tmp_path / "file" / "store").check()


def test_the_generator_version_follows_the_files_that_decide_schedules(tmp_path: Path) -> None:
    files = generator_files()
    for needed in (
        "scenarios/random_faults.py",
        "scenarios/random_rule.py",
        "scenarios/random_vocabulary.py",
        "scenarios/base.py",
        "lab/campaign/guide.py",
        "lab/campaign/mutations.py",
        "lab/campaign/windows.py",
        "lab/campaign/danger.py",
        "scenarios/random_patterns.py",
        "scenarios/random_pattern_steps.py",
        "scenarios/random_patterns_group.py",
        "scenarios/random_patterns_ap.py",
        "lab/judge/bounds.py",
        "lab/ground/faultops.py",
    ):
        assert needed in files
    assert all((ROOT / f).is_file() for f in files), "a file the version names is missing"
    assert "scenarios/random_*.py" in GENERATOR_SOURCES
    copy = tmp_path / "tree"
    for name in files:
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, copy / name)
    before = generator_version(copy)
    assert before == generator_version(ROOT) and before.startswith("g-")
    (copy / "scenarios" / "random_pattern_new.py").write_text("# a new rule\n")
    added = generator_version(copy)
    assert added != before  # a new random_* module is part of the generator
    (copy / "lab" / "campaign" / "guide.py").write_text("# changed\n")
    assert generator_version(copy) not in (before, added)
    (copy / "lab" / "campaign" / "summary.py").write_text("# not the generator\n")
    assert generator_version(copy) == generator_version(copy)


def test_from_store_makes_the_page_without_running_anything(tmp_path: Path) -> None:
    zoo = {b.name: b for b in load_zoo()}
    name = "election-forgets-recency"
    version = generator_version()
    store = TrialStore(tmp_path / "store")
    stamp = replace(STAMP, version=version, budget_s=120.0)
    for n, minutes in enumerate([1.5, None, 0.9], start=1):
        cell = trial(name, "random", n, minutes, canary=True, reached=0.1, triggered=0.8)
        store.append(cell, stamp, zoo[name].digest)
    store.append(trial(name, "random", 4, 0.2), replace(stamp, version="g-older"), "x")
    page = tmp_path / "out" / "detection.md"
    made = run_lab(
        *("bench", "detection", "--from-store", "--store", str(tmp_path / "store")),
        *("--page", str(page)),
        cwd=tmp_path,
    )
    assert made.returncode == 0, made.stderr
    last = made.stdout.splitlines()[-1]
    assert last == (
        "detection: random 1/1 found, median 1.2 min (campaigns of 2 min, 3 trials each)"
    )
    text = page.read_text(encoding="utf-8")
    assert f"**{last}**" in text and "1 trial(s) of another generator version (g-older)" in text
    assert (tmp_path / "out" / "detection-survival.svg").read_text().startswith("<?xml")
    figures = json.loads(page.with_suffix(".json").read_text())
    assert [c["trial"] for c in figures["cells"]] == [1, 2, 3]
    assert "1 left out" in made.stderr


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--from-store",), "--from-store makes a page: give --page FILE"),
        (
            ("--from-store", "--page", "p.md", "--trials", "2"),
            "--from-store runs nothing: --trials asks for campaigns",
        ),
        (
            ("--from-store", "--page", "p.md", "--bugs", "x"),
            "--from-store runs nothing: --bugs asks for campaigns",
        ),
    ],
)
def test_from_store_refuses_what_would_run_campaigns(
    argv: tuple[str, ...], message: str, tmp_path: Path
) -> None:
    done = run_lab("bench", "detection", *argv, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [f"lab: error: {message}"]


def test_from_store_with_no_trial_of_the_budget_asked_says_so(tmp_path: Path) -> None:
    store = TrialStore(tmp_path / "store")
    stamp = replace(STAMP, version=generator_version(), budget_s=120.0)
    store.append(trial(None, "random", 1, None), stamp, None)
    done = run_lab(
        *("bench", "detection", "--from-store", "--store", str(tmp_path / "store")),
        *("--page", str(tmp_path / "p.md"), "--budget", "5m"),
        cwd=tmp_path,
    )
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1
    assert "with 5-min campaigns" in done.stderr
    assert "(1 left out: 1 trial(s) of another budget (2 min))" in done.stderr
    assert not (tmp_path / "p.md").exists()


def test_from_store_with_no_trial_of_this_version_says_so(tmp_path: Path) -> None:
    done = run_lab(
        *("bench", "detection", "--from-store", "--store", str(tmp_path / "empty")),
        *("--page", str(tmp_path / "p.md")),
        cwd=tmp_path,
    )
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1
    assert "--from-store: no trial of this generator version" in done.stderr
    assert not (tmp_path / "p.md").exists()
