"""The detection page from hand-written stored trials (no campaign): when, by which commands and
of which generator version its trials are, what was left out, the headline, the targets, the
bugs written before and after the generator in tables of their own with reached / triggered /
detected per cell, throughput, the survival curves (an image beside the page and their
numbers), the paired comparison, every trial and the named matrix; its figures as JSON."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from detection_helpers import cell_trials, trial

from lab.bench.detection_page import command_of, generators_of, make_page, write_page
from lab.bench.detection_request import DetectionRequest
from lab.bench.detection_results import NamedResult, ShrinkResult
from lab.bench.detection_store import Selection
from lab.bench.zoo import Bug, Replacement

MADE = dt.datetime(2026, 12, 6, 9, 30, tzinfo=dt.UTC)
PACE = {"campaign_s": 200.0, "run_s": 180.0, "faults": 12, "first_run_s": 3.0}


def _bug(name: str, after: bool = False) -> Bug:
    return Bug(
        name,
        "replicated-group",
        "x",
        "x",
        "x",
        ("lost",),
        False,
        (Replacement("broker_ref/x.py", "a", "b"),),
        Path(f"zoo/{name}.toml"),
        after_generator=after,
    )


ZOO = [_bug("early"), _bug("late", after=True)]
CELLS = (
    *cell_trials("early", "random", [None, 3.0], canary=True, reached=0.3, **PACE),
    *cell_trials("early", "coverage", [1.0, 1.4], canary=True, reached=0.2, triggered=0.9, **PACE),
    *cell_trials("late", "random", [None, None], after_generator=True, **PACE),
    *cell_trials("late", "coverage", [2.5, None], after_generator=True, **PACE),
    trial(None, "random", 1, None, **PACE),
)
SELECTION = Selection(
    cells=CELLS,
    shrinks=(ShrinkResult("early", "coverage", "shrunk", (30, 4), (18.0, 6.0), 5),),
    named=(
        NamedResult("early", "master-failure", "J1", "broken", ("lost",)),
        NamedResult("early", "quorum-loss", "J6", "held", reached=True, triggered=True),
        NamedResult(None, "master-failure", "J1", "held"),
    ),
    left_out={"trial(s) of another generator version (g-old)": 3},
    commits=("abc123",),
    commands=("lab bench detection --bugs early", "lab bench detection --bugs late"),
    machines=("vm, 2 CPUs",),
    first="2026-12-04T10:00:00Z",
    last="2026-12-05T18:00:00Z",
)
REQUEST = DetectionRequest(
    budget_s=300.0, trials=2, generators=("random", "coverage"), page=Path("d.md")
)


def test_the_page_says_where_its_trials_come_from_and_what_was_left_out() -> None:
    made = make_page(REQUEST, SELECTION, ZOO, "g-new", "vm, load 3.0", MADE, None)
    text = made.text
    assert text.startswith("# Observed: the detection benchmark\n")
    assert f"- made 2026-12-06 09:30 UTC by `{command_of(REQUEST)}` on vm, load 3.0" in text
    assert "- trials stored 2026-12-04T10:00:00Z to 2026-12-05T18:00:00Z by " in text
    assert "`lab bench detection --bugs early`; `lab bench detection --bugs late`" in text
    assert "- generator version g-new; the lab's commits: abc123" in text
    assert (
        "9 trial(s) of this version and a budget of 5 min counted; 3 left out: 3 trial(s) of "
        "another generator version (g-old)"
    ) in text
    assert made.last == (
        "detection: random 1/1 found before, 0/1 after, median 3.0 min; "
        "coverage 1/1 before, 1/1 after, median 1.4 min (3.0x) "
        "(campaigns of 5 min, 2 trials each); "
        "named scenarios caught 1/1 bugs (1/1 held without a bug)"
    )
    assert f"**{made.last}**" in text


def test_the_two_sets_of_bugs_have_tables_of_their_own_with_their_stages() -> None:
    text = make_page(REQUEST, SELECTION, ZOO, "g-new", "vm", MADE, None).text
    before = text.index("## Bugs written before the generator")
    after = text.index("## Bugs written after the generator")
    control = text.index("## The tree without a bug (control)")
    assert before < text.index("| early |") < after < text.index("| late |") < control
    assert (
        "| early | replicated-group | 1/2, 3.0 min, 4 runs<br>reached 2/2 (0.3 min), "
        "triggered 0/2, detected 1/2 (3.0 min)<br>misses: 1 reached, never triggered; "
        "1 detected, canary never triggered | "
        "2/2, 1.2 min, 4 runs; shrunk 30→4 ops<br>reached 2/2 (0.2 min), triggered 2/2 "
        "(0.9 min), detected 2/2 (1.2 min) | lost |"
    ) in text
    assert "misses: 2 no canary" in text and "misses: 1 no canary" in text  # late has none
    assert text.count("Found in at least one trial:") == 2


def test_the_page_shows_targets_throughput_survival_comparison_and_trials() -> None:
    text = make_page(REQUEST, SELECTION, ZOO, "g-new", "vm", MADE, Path("d-survival.svg")).text
    assert "| every bug found by coverage in at least 2 of 3 trials | **missed** | 1/2 bugs" in text
    assert "| coverage at least 2× faster than random (paired per-bug medians) | **met** |" in text
    # 40 runs and 60 faults in 1000 s of campaigns; the misses stopped 100 s before the budget
    assert "| random | 5 | 40 | 2.40 | 60 | 3.6 | 90% | 3.0 s | 0.0 s | 17.0 s | 100 s |" in text
    assert "![Time to first detection, per generator](d-survival.svg)" in text
    assert "| random | 4 | 1 | – | 1.00 | 1.00 | 1.00 | 0.75 | 0.75 |" in text
    assert "**coverage against random: 3.0× faster over 1 bug both found; all trials:" in text
    assert "| early | 3.0 min | 1.0 min | 3.0× |" in text
    assert (
        "| early | random | 1 | 11 | no | 9 | 12 | 0 | 0.3 | – | – | reached, never triggered "
        "| – | – |"
    ) in text
    assert "| late | random | 1 | 11 | no | 9 | 12 | 0 | – | – | – | no canary | – | – |" in text
    assert "| early | **broken** (lost) | held · triggered |" in text  # the checker's miss


def test_write_page_puts_the_image_and_the_figures_beside_it(tmp_path: Path) -> None:
    page = tmp_path / "observed" / "detection.md"
    request = DetectionRequest(budget_s=300.0, generators=("random", "coverage"), page=page)
    made = write_page(request, SELECTION, ZOO, "g-new", "vm")
    assert page.read_text(encoding="utf-8") == made.text
    svg = (tmp_path / "observed" / "detection-survival.svg").read_text(encoding="utf-8")
    assert svg.startswith("<?xml") and "coverage (3/4 found)" in svg
    assert "![Time to first detection, per generator](detection-survival.svg)" in made.text
    figures = json.loads(page.with_suffix(".json").read_text(encoding="utf-8"))
    assert figures["version"] == "g-new" and len(figures["cells"]) == 9
    assert [t["status"] for t in figures["targets"]][:2] == ["missed", "met"]
    assert figures["comparisons"][0]["median_ratio"] == 3.0
    assert [p["generator"] for p in figures["throughput"]] == ["random", "coverage"]
    again = write_page(request, SELECTION, ZOO, "g-new", "vm")
    assert (tmp_path / "observed" / "detection-survival.svg").read_text() == svg  # no date
    assert again.figures == made.figures


def test_the_page_names_the_generators_and_the_command_that_made_it() -> None:
    assert generators_of(CELLS) == ["random", "coverage"]
    assert generators_of([trial("a", "zeta", 1, None)], ("coverage",)) == ["coverage", "zeta"]
    assert command_of(REQUEST) == (
        "lab bench detection --budget 300s --trials 2 --generators random,coverage --jobs 1 "
        "--seed 20261126 --shrink-budget 180s --page d.md"
    )
    from_store = DetectionRequest(
        budget_s=600.0, trials=0, page=Path("p.md"), store=Path("s"), from_store=True
    )
    assert command_of(from_store) == (
        "lab bench detection --from-store --store s --budget 600s --page p.md"
    )


def test_a_page_of_named_runs_alone_draws_no_curve_and_says_what_the_named_caught(
    tmp_path: Path,
) -> None:
    named_only = Selection(cells=(), shrinks=(), named=SELECTION.named)
    request = DetectionRequest(trials=0, page=tmp_path / "d.md", from_store=True)
    made = write_page(request, named_only, ZOO, "g-new", "vm")  # warnings are errors here
    assert made.last == "detection: named scenarios caught 1/1 bugs (1/1 held without a bug)"
    assert (tmp_path / "d-survival.svg").is_file()
    assert "| early | **broken** (lost) | held · triggered |" in made.text
    assert "| reached / triggered / detected for every cell | not measured |" in made.text
