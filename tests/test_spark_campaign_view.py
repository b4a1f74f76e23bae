"""The campaign view end to end: synthesized run folders of two nights (one a campaign folder
with campaign.json), `lab report`'s entry point, the view's numbers checked against a direct
computation from the result.json files, and the page looked at in headless Chromium at a
laptop's width (1366×768)."""

from __future__ import annotations

import argparse
import datetime as dt
import html
import json
import re
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest
from chromium import CHROMIUM_FLAGS, chromium
from pyspark.sql import SparkSession

from lab.bench.synth_runs import synthesize_runs
from spark_reports.campaign_runs import CampaignRun, campaign_runs_frame
from spark_reports.campaign_view import (
    NEVER,
    campaign_table,
    failover_histogram,
    nights_table,
    violations_by_kind,
)
from spark_reports.cli import add_arguments, run_report
from spark_reports.wilson import wilson_interval

Z = 1.959963984540054
KEY = ("scenario", "target", "backend", "mode")

_PROBE = """
window.addEventListener("load", () => {
  const right = (e) => Math.ceil(e.getBoundingClientRect().right);
  const out = {
    scrollWidth: document.documentElement.scrollWidth,
    innerWidth: window.innerWidth,
    tables: [...document.querySelectorAll("table")].map((t) => ({
      right: right(t), scroll: t.scrollWidth, client: t.clientWidth,
      head: [...t.querySelectorAll("th")].map((th) => th.textContent).join(",")})),
    images: [...document.querySelectorAll("img")].map((i) => ({alt: i.alt, right: right(i)})),
    sentences: [...document.querySelectorAll("p.chart")].map((p) => p.textContent),
  };
  const pre = document.createElement("pre");
  pre.id = "probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
"""


def _wilson_by_quadratic(held: int, runs: int) -> tuple[float, float]:
    """The bounds p of (p̂ − p)² = z² p(1 − p)/n, by the quadratic formula, in percent."""
    p_hat, z2 = held / runs, Z * Z
    a, b, c = 1 + z2 / runs, -(2 * p_hat + z2 / runs), p_hat * p_hat
    root = (b * b - 4 * a * c) ** 0.5
    return (-b - root) / (2 * a) * 100, (-b + root) / (2 * a) * 100


def _edit(folder: Path, **fields: Any) -> None:
    path = folder / "result.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **fields}))


def _held_folders(root: Path) -> list[Path]:
    found = []
    for path in sorted(root.glob("*/*/result.json")):
        result = json.loads(path.read_text())
        if result.get("verdict") == "held" and result.get("metrics", {}).get("failover_s"):
            found.append(path.parent)
    return found


def _expected(roots: dict[Path, str | None]) -> dict[tuple[str, ...], dict[str, Any]]:
    """Per group, straight from the files: runs, held, outcomes, kinds, failovers, nights."""
    groups: dict[tuple[str, ...], dict[str, Any]] = {}
    for root, started in roots.items():
        for folder in sorted(p for p in root.glob("*/*") if p.is_dir()):
            path = folder / "result.json"
            result = json.loads(path.read_text()) if path.is_file() else None
            if result is None or "error" in result or "scenario" not in result:
                continue  # unreadable ones are counted by the unit tests
            key = tuple(str(result[k]) for k in KEY)
            group = groups.setdefault(
                key,
                {"runs": 0, "held": 0, "outcomes": {}, "kinds": {}, "failovers": [], "nights": {}},
            )
            if result["verdict"] == "interrupted":
                group["interrupted"] = group.get("interrupted", 0) + 1
                continue
            night = started or f"{folder.name[:4]}-{folder.name[4:6]}-{folder.name[6:8]}"
            held = result["verdict"] == "held"
            group["runs"] += 1
            group["held"] += held
            tally = group["nights"].setdefault(night, [0, 0])
            tally[0] += 1
            tally[1] += held
            if not held:
                group["outcomes"][result["verdict"]] = (
                    group["outcomes"].get(result["verdict"], 0) + 1
                )
            for kind in set(result["violations"]):
                group["kinds"][kind] = group["kinds"].get(kind, 0) + 1
            group["failovers"].extend(result["metrics"]["failover_s"])
    return groups


def _rows(out: Path, name: str) -> list[dict[str, Any]]:
    return list(pq.read_table(out / f"{name}.parquet").to_pylist())


def _look(page: Path, profile: Path) -> dict[str, Any]:
    probe = page.with_name("probe.html")
    probe.write_text(page.read_text().replace("</body>", f"<script>{_PROBE}</script></body>"))
    done = subprocess.run(
        [
            chromium(),
            *CHROMIUM_FLAGS,
            f"--user-data-dir={profile}",
            "--window-size=1366,768",
            "--virtual-time-budget=10000",
            "--dump-dom",
            probe.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    found = re.search(r'<pre id="probe">(.*?)</pre>', done.stdout, re.S)
    assert found, done.stdout[-2000:]
    return dict(json.loads(html.unescape(found[1])))


@pytest.mark.spark
@pytest.mark.allure
def test_campaign_view_numbers_and_page(spark: SparkSession, tmp_path: Path) -> None:
    campaign = tmp_path / "night-a"
    synthesize_runs(
        campaign / "runs",
        runs=18,
        operations_per_run=150,
        seed=3,
        partial=2,
        days=1,
        start=dt.datetime(2026, 1, 5, 21, 0, tzinfo=dt.UTC),
    )
    (campaign / "campaign.json").write_text(
        json.dumps({"v": 1, "started": "2026-01-05T21:00:00Z", "runs": []})
    )
    plain = tmp_path / "plain"
    synthesize_runs(
        plain,
        runs=18,
        operations_per_run=150,
        seed=4,
        partial=0,
        days=1,
        start=dt.datetime(2026, 1, 7, 0, 30, tzinfo=dt.UTC),
    )
    # A verdict the lab does not know yet, a run of another mode, an interrupted run.
    first, second = _held_folders(plain)[:2]
    _edit(first, verdict="deviation", violations=["unavailable>bound"])
    _edit(second, mode="active-passive")
    _edit(_held_folders(campaign / "runs")[0], verdict="interrupted", reasons=["by SIGTERM"])

    out = tmp_path / "report"
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(
        [str(campaign / "runs"), str(plain), "--out", str(out), "--master", "local[2]"]
    )
    said: list[str] = []
    assert run_report(args, said.append) == 0
    assert any(line.startswith("load: campaign view") for line in said)

    expected = _expected({campaign / "runs": "2026-01-05", plain: None})
    table = {tuple(r[k] for k in KEY): r for r in _rows(out, "campaign")}
    groups = {k: v for k, v in table.items() if k[0] != "(unknown)"}
    assert set(groups) == set(expected)
    assert ("master-crash", "broker_ref", "process", "active-passive") in groups
    for key, want in expected.items():
        row = groups[key]
        assert (row["runs"], row["held"]) == (want["runs"], want["held"]), key
        assert row["held_pct"] == pytest.approx(100 * want["held"] / want["runs"], abs=0.005)
        low, high = _wilson_by_quadratic(want["held"], want["runs"])
        assert row["held_ci_low_pct"] == pytest.approx(low, abs=0.006), key
        assert row["held_ci_high_pct"] == pytest.approx(high, abs=0.006), key
        assert row["held_ci_low_pct"] <= row["held_pct"] <= row["held_ci_high_pct"]
        outcomes = sorted(f"{o} {n}" for o, n in want["outcomes"].items())
        assert row["other_outcomes"] == outcomes, key
        assert row["interrupted"] == want.get("interrupted", 0), key
        failovers = [f for f in want["failovers"] if f is not None]
        assert row["failovers"] == len(failovers)
        if failovers:
            p50, p90 = np.percentile(failovers, [50, 90])
            assert row["failover_p50_s"] == pytest.approx(p50, abs=5e-4)
            assert row["failover_p90_s"] == pytest.approx(p90, abs=5e-4)
            assert row["failover_max_s"] == pytest.approx(max(failovers), abs=5e-4)
    assert sum(r["interrupted"] for r in table.values()) == 1
    assert sum(r["unreadable"] for r in table.values()) == 2  # the synthesizer's two defects
    assert any("deviation 1" in r["other_outcomes"] for r in groups.values())

    kinds = {(tuple(r[k] for k in KEY), r["kind"]): r for r in _rows(out, "campaign_violations")}
    want_kinds = {(key, kind): n for key, g in expected.items() for kind, n in g["kinds"].items()}
    assert {k: r["runs"] for k, r in kinds.items()} == want_kinds
    assert {kind for _, kind in want_kinds} >= {"lost", "unavailable>bound"}
    for (key, _), row in kinds.items():
        assert row["share_pct"] == pytest.approx(
            100 * row["runs"] / expected[key]["runs"], abs=0.005
        )

    nights = _rows(out, "campaign_nights")
    assert {r["night"] for r in nights if r["scenario"] != "(unknown)"} == {
        "2026-01-05",
        "2026-01-07",
    }
    for row in nights:
        key = tuple(row[k] for k in KEY)
        if key in expected and row["night"] in expected[key]["nights"]:
            runs, held = expected[key]["nights"][row["night"]]
            assert (row["runs"], row["held"]) == (runs, held), (key, row["night"])
            assert row["campaigns"] == (["night-a"] if row["night"] == "2026-01-05" else [])

    page = out / "report.html"
    text = page.read_text()
    assert text.index('<h2 id="campaign-view">') < text.index('<h2 id="broken-runs">')
    seen = _look(page, tmp_path / "profile")
    assert seen["innerWidth"] == 1366
    assert seen["scrollWidth"] <= seen["innerWidth"], seen["tables"]
    for shown in seen["tables"]:
        assert shown["right"] <= seen["innerWidth"] and shown["scroll"] <= shown["client"] + 1
    assert all(image["right"] <= seen["innerWidth"] for image in seen["images"])
    assert any(
        t["head"].startswith("scenario,target,backend,mode,runs,held") for t in seen["tables"]
    )
    alts = {image["alt"] for image in seen["images"]}
    assert {"held rate by night", "runs by violation kind", "failover times"} <= alts
    # master-crash runs are all 2-node: nothing to compare with No HA, said in words
    assert any(s.startswith("Throughput vs No HA, master-crash") for s in seen["sentences"])
    assert "change vs No HA master-crash on broker_ref (process)" not in alts


@pytest.mark.spark
def test_campaign_transforms_on_a_tiny_frame(spark: SparkSession) -> None:
    def run(number: int, **fields: Any) -> CampaignRun:
        base = CampaignRun(f"s/{number}", f"/r/{number}", "s", "t", "b", "m", "2026-01-05")
        return replace(base, **{"outcome": "held", **fields})

    records = [
        run(1, failover_s=(0.5, None)),
        run(2, failover_s=(0.49,)),
        run(3, outcome="deviation", violations=("x",), failover_s=(31.0,)),
        run(4, outcome="broken", violations=("lost", "x"), night="2026-01-06"),
        run(5, outcome=None, interrupted=True, problem="run was interrupted"),
        run(6, outcome=None, problem="no result.json"),
        run(7, outcome="broken", replay=True, violations=("lost",)),
        run(8, target=None, night=None),
    ]
    runs = campaign_runs_frame(spark, records)
    (row, unknown) = sorted(campaign_table(runs).collect(), key=lambda r: r["target"] != "t")
    assert (row["runs"], row["held"], row["other_outcomes"]) == (
        4,
        2,
        ["broken 1", "deviation 1"],
    )
    assert (row["interrupted"], row["unreadable"], row["replays"]) == (1, 1, 1)
    interval = wilson_interval(2, 4)
    assert interval is not None
    assert row["held_ci_low_pct"] == pytest.approx(100 * interval[0], abs=0.005)
    assert row["held_ci_high_pct"] == pytest.approx(100 * interval[1], abs=0.005)
    assert (row["failovers"], row["failovers_never"], row["failover_max_s"]) == (3, 1, 31.0)
    assert row["failover_p50_s"] == pytest.approx(0.5)
    assert (unknown["target"], unknown["runs"], unknown["held"]) == ("(unknown)", 1, 1)

    kinds = {
        (r["target"], r["kind"]): (r["runs"], r["share_pct"])
        for r in violations_by_kind(runs).collect()
    }
    assert kinds == {("t", "x"): (2, 50.0), ("t", "lost"): (1, 25.0)}
    buckets = {r["bucket"]: r["faults"] for r in failover_histogram(runs).collect()}
    assert buckets == {"< 0.5 s": 1, "0.5–1 s": 1, "≥ 30 s": 1, NEVER: 1}
    nights = {
        (r["target"], r["night"]): (r["runs"], r["held"]) for r in nights_table(runs).collect()
    }
    assert nights == {
        ("t", "2026-01-05"): (3, 2),
        ("t", "2026-01-06"): (1, 0),
        ("(unknown)", "(undated)"): (1, 1),
    }
