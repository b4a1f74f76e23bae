"""The campaign report end to end: synthesized run folders of two nights (one a campaign folder
with its campaign.json), `lab report`'s entry point, the campaign view's numbers checked
against a direct computation from the result.json files, and the page looked at as a person
sees it, in headless Chromium at a laptop's width (1366×768)."""

from __future__ import annotations

import argparse
import datetime as dt
import html
import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest
from chromium import CHROMIUM_FLAGS, chromium
from pyspark.sql import SparkSession
from spark_helpers import write_campaign_json

from lab.bench.synth_runs import synthesize_runs
from spark_reports.cli import add_arguments, run_report

Z = 1.959963984540054
KEY = ("scenario", "target", "backend", "mode")

_PROBE = """
window.addEventListener("load", () => {
  const right = (e) => Math.ceil(e.getBoundingClientRect().right);
  const text = (e) => e.textContent.trim();
  const before = (e, tag) => {
    for (let p = e.previousElementSibling; p; p = p.previousElementSibling) {
      if (p.tagName === tag) return text(p);
      if (tag === "H3" || p.tagName === "H2") return "";
    }
    return "";
  };
  const section = (e) => {
    for (let p = e.previousElementSibling; p; p = p.previousElementSibling) {
      if (p.tagName === "H2") return text(p);
    }
    return "";
  };
  const h2 = [...document.querySelectorAll("h2")];
  const summary = [];
  let e = h2[0] && h2[0].nextElementSibling;
  for (; e && e.tagName !== "H2"; e = e.nextElementSibling) summary.push(text(e));
  const out = {
    scrollWidth: document.documentElement.scrollWidth,
    innerWidth: window.innerWidth,
    h2: h2.map(text),
    summary: summary.join("\\n"),
    texts: [...document.querySelectorAll("p")].map(text),
    tables: [...document.querySelectorAll("table")].map((t) => {
      const rows = [...t.querySelectorAll("tbody tr")].map((r) => [...r.cells].map(text));
      const heads = [...t.querySelectorAll("th")].map(text);
      return {
        right: right(t), scroll: t.scrollWidth, client: t.clientWidth,
        caption: t.previousElementSibling && t.previousElementSibling.tagName === "H3"
          ? text(t.previousElementSibling) : "",
        section: section(t), heads: heads, rows: rows.length,
        filled: rows.flat().filter((c) => c !== "").length,
        cells: rows.flat().join(" | "),
        empty_columns: heads.filter((_, i) => rows.every((r) => r[i] === "")),
      };
    }),
    images: [...document.querySelectorAll("img")].map((i) => ({alt: i.alt, right: right(i)})),
    requests: performance.getEntriesByType("resource").map((r) => r.name)
      .filter((name) => !name.startsWith("data:")),
  };
  const pre = document.createElement("pre");
  pre.id = "probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
"""
_OFFLINE = (
    "--host-resolver-rules=MAP * ~NOTFOUND",  # no name resolves
    "--proxy-server=http://127.0.0.1:9",  # and any address is sent to a closed local port
    "--proxy-bypass-list=<-loopback>",
)


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


def _expected(
    roots: dict[Path, str | None], replays: set[str]
) -> dict[tuple[str, ...], dict[str, Any]]:
    """Per group, straight from the files: runs, held, outcomes, kinds, failovers, nights
    (replays counted apart)."""
    groups: dict[tuple[str, ...], dict[str, Any]] = {}
    for root, started in roots.items():
        for folder in sorted(p for p in root.glob("*/*") if p.is_dir()):
            path = folder / "result.json"
            result = json.loads(path.read_text()) if path.is_file() else None
            if result is None or "error" in result or "scenario" not in result:
                continue  # unreadable ones are counted by the unit tests
            if f"{folder.parent.name}/{folder.name}" in replays:
                continue
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
            *_OFFLINE,
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


@dataclass(frozen=True)
class Built:
    """The report of a synthesized campaign night (campaign.json, a replay, new and recorded
    failures, an interrupted run) and of a second night outside any campaign."""

    out: Path
    campaign: Path
    plain: Path
    known: dict[str, str]
    said: tuple[str, ...]


@pytest.fixture(scope="module")
def built(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Built:
    tmp_path = tmp_path_factory.mktemp("campaign-report")
    campaign = tmp_path / "night-a"
    synthesize_runs(
        campaign / "runs",
        runs=18,
        operations_per_run=150,
        seed=12,
        partial=2,
        days=1,
        start=dt.datetime(2026, 1, 5, 21, 0, tzinfo=dt.UTC),
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
    # No single-node run: a campaign of fault scenarios has no "No HA" baseline.
    for spec in [*campaign.glob("runs/*/*/spec.json"), *plain.glob("*/*/spec.json")]:
        if '"nodes": 1' in spec.read_text():
            shutil.rmtree(spec.parent)
    # A verdict the lab does not know yet, a run of another mode, an interrupted run.
    first, second = _held_folders(plain)[:2]
    _edit(first, verdict="deviation", violations=["unavailable>bound"])
    _edit(second, mode="active-passive")
    _edit(_held_folders(campaign / "runs")[0], verdict="interrupted", reasons=["by SIGTERM"])
    known = write_campaign_json(
        campaign, started="2026-01-05T21:00:00Z", budget_s=1800.0, seed=42, replayed="f" * 12
    )
    out = tmp_path / "report"
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(
        [str(campaign / "runs"), str(plain), "--out", str(out), "--master", "local[2]"]
    )
    said: list[str] = []
    assert run_report(args, said.append) == 0
    return Built(out, campaign, plain, known, tuple(said))


@pytest.mark.spark
def test_campaign_view_numbers(built: Built) -> None:
    out, campaign, plain = built.out, built.campaign, built.plain
    replays = {run_id for run_id, how in built.known.items() if how == "replay"}
    assert len(replays) == 1 and "new" in built.known.values()
    expected = _expected({campaign / "runs": "2026-01-05", plain: None}, replays)
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
            assert row["failover_p50_s"] == pytest.approx(p50, abs=6e-4)  # rounded to 3 places
            assert row["failover_p90_s"] == pytest.approx(p90, abs=6e-4)
            assert row["failover_max_s"] == pytest.approx(max(failovers), abs=6e-4)
    assert sum(r["interrupted"] for r in table.values()) == 1
    assert sum(r["replays"] for r in table.values()) == 1  # campaign.json says it replays
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

    failing = {r["run_id"]: r for r in _rows(out, "failing_runs")}
    assert {k: r["known"] for k, r in failing.items() if r["campaign"]} == built.known
    assert all(r["reproduce"].startswith("lab replay ") for r in failing.values())
    assert {r["outcome"] for r in failing.values()} == {"broken", "deviation"}


@pytest.mark.spark
@pytest.mark.allure
def test_the_report_page_as_a_person_sees_it(built: Built, tmp_path: Path) -> None:
    """Headless Chromium at a laptop's width (1366×768), the page a local file and every
    other request refused: what comes first, what the headers say, what is a sentence."""
    seen = _look(built.out / "report.html", tmp_path / "profile")
    assert seen["innerWidth"] == 1366
    assert seen["scrollWidth"] <= seen["innerWidth"], seen["tables"]
    for shown in seen["tables"]:
        assert shown["right"] <= seen["innerWidth"] and shown["scroll"] <= shown["client"] + 1
    assert all(image["right"] <= seen["innerWidth"] for image in seen["images"])
    assert seen["requests"] == [], "the page asked for something beyond itself"

    # The summary comes first: what ran (with the campaign's budget and seed), what broke
    # (each failing run with its command), what is new and how that is decided.
    headings = seen["h2"]
    assert headings[0] == "Summary"
    summary = seen["summary"]
    assert "judged runs in" in summary and "cells (scenario × target × backend × mode)" in summary
    assert "Campaign night-a: budget 30 min, seed 42" in summary
    assert "1 recorded failure replayed first: 1 still failing." in summary
    assert "did not hold" in summary and "By the failure database:" in summary
    assert "No previous report was given" in summary
    failing = next(t for t in seen["tables"] if t["caption"] == "Failing runs")
    assert failing["section"] == "Summary"
    assert failing["rows"] == len(_rows(built.out, "failing_runs")) >= len(built.known) + 1
    assert failing["cells"].count("lab replay ") == failing["rows"]
    before = [t for t in seen["tables"] if t["section"] == "Summary"]
    assert before and seen["tables"][: len(before)] == before  # no other table before it

    # Headers are words with units, never a column's name (a configuration's setting names,
    # WRITE_NO_SYNC, are the broker's own words).
    heads = [h for t in seen["tables"] for h in t["heads"]]
    assert "Held, 95 % CI low (%)" in heads and "Unavailable, total (s)" in heads
    assert not [h for h in heads if re.fullmatch(r"[a-z0-9]+(_[a-z0-9]+)+", h)], heads

    # No table of empty cells; a section with nothing to show is a sentence.
    for shown in seen["tables"]:
        assert shown["rows"] > 0 and shown["filled"] > 0, shown["caption"]
        assert shown["empty_columns"] == [], shown
    assert not any(t["caption"].startswith("Throughput vs No HA") for t in seen["tables"])
    assert any(
        p.startswith("Throughput against a single node: nothing to compare") for p in seen["texts"]
    )
    alts = {image["alt"] for image in seen["images"]}
    assert {"held rate by cell", "held rate by night"} <= alts
    assert not any(alt.startswith("change vs No HA") for alt in alts)
