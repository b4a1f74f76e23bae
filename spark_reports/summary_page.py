"""The page's first section: what ran, what broke, and what is new.

What is new is decided two ways, each said on the page:

- by the failure database (runs of a campaign): a failing run whose failure — its spec:
  scenario, settings, seed and schedule — the database had not recorded before the run
  ended (campaign.json's `new_failure`). A campaign draws fresh seeds, so a failure of a
  fresh run is nearly always new by this measure: it says the run is worth a look, not that
  the broker changed;
- against the previous report (`--previous DIR`): a violation kind in a cell (scenario ×
  target × backend × mode) that the previous report's failing runs did not show.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from spark_reports.campaign_facts import CampaignFacts
from spark_reports.campaign_view import KEY
from spark_reports.html_page import Items, Part, Section, Table, Text
from spark_reports.page_data import PageData

__all__ = ["duration", "summary_section", "utc_minute"]

_KNOWN = {"new": "new", "recorded": "recorded before", "replay": "replay"}


def _total(table: pa.Table, column: str) -> int:
    return sum(int(v or 0) for v in table.column(column).to_pylist())


def _plural(count: int, one: str, many: str | None = None) -> str:
    return f"{count:,} {one if count == 1 else (many or one + 's')}"


def duration(seconds: float) -> str:
    """`4 min`, `1 h 30 min`, `45 s`."""
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{hours} h" if hours else "", f"{minutes} min" if minutes else ""]
    parts.append(f"{secs} s" if secs and not hours else "")
    return " ".join(p for p in parts if p) or "0 s"


def utc_minute(stamp: str | None) -> str:
    """`2026-01-05T21:00:07Z` as `2026-01-05 21:00 UTC`."""
    if not stamp:
        return "?"
    return f"{stamp[:10]} {stamp[11:16]} UTC" if len(stamp) >= 16 else stamp


def _campaign_sentence(c: CampaignFacts) -> str:
    if c.problem is not None:
        return f"Campaign {c.name}: {c.problem}."
    asked = [
        f"budget {duration(c.budget_s)}" if c.budget_s is not None else "",
        f"seed {c.seed}" if c.seed is not None else "",
        _plural(c.jobs, "run") + " at a time" if c.jobs is not None else "",
        f"shard {c.shard}" if c.shard else "",
    ]
    ran = f"started {utc_minute(c.started)}"
    if c.ended:
        ran += f", ended {utc_minute(c.ended)}"
    if c.elapsed_s:
        ran += f" ({duration(c.elapsed_s)})"
    planned = f"; {_plural(c.cells, 'cell')} planned" if c.cells else ""
    skipped = f"; skipped: {'; '.join(c.skipped)}" if c.skipped else ""
    return f"Campaign {c.name}: {', '.join(a for a in asked if a)}; {ran}{planned}{skipped}."


def _what_ran(data: PageData) -> list[Part]:
    cells, facts = data.tables["campaign"], data.facts
    runs, held = _total(cells, "runs"), _total(cells, "held")
    used = sum(1 for n in cells.column("runs").to_pylist() if n)
    rate = f" ({100 * held / runs:.0f} %)" if runs else ""
    lines = [
        f"{_plural(runs, 'judged run')} in {_plural(used, 'cell')} (scenario × target × "
        f"backend × mode): {held:,} held{rate}."
    ]
    apart = [
        _plural(_total(cells, "replays"), "replay") + " of recorded failures",
        _plural(_total(cells, "interrupted"), "interrupted run"),
        _plural(_total(cells, "unreadable"), "run folder") + " that could not be read"
        " (listed at the end)",
    ]
    counted = [a for a in apart if not a.startswith("0 ")]
    if counted:
        lines.append(f"Counted apart: {'; '.join(counted)}.")
    if not facts.campaigns:
        lines.append("These runs are not from a campaign (no campaign.json beside their runs).")
    elif facts.outside:
        lines.append(
            f"{_plural(facts.outside, 'run folder')} of these are in no campaign (no "
            "campaign.json beside their runs)."
        )
    lines.extend(_campaign_sentence(c) for c in facts.campaigns)
    for c in facts.campaigns:
        if c.without_folder:
            lines.append(
                f"{_plural(len(c.without_folder), 'run')} of {c.name} ended without a run "
                f"folder (see its logs/): {'; '.join(c.without_folder)}."
            )
    parts: list[Part] = [Items(tuple(lines), heading="What ran")]
    shown = (*KEY, "runs", "held", "held_pct", "held_ci_low_pct", "held_ci_high_pct")
    parts.append(
        Table(
            "Runs by cell",
            cells.select([*shown, "other_outcomes", "violating_runs"]),
            "No run could be judged.",
            KEY,
        )
    )
    return parts


def _what_broke(data: PageData) -> list[Part]:
    failing, kinds = data.tables["failing_runs"], data.tables["failure_kinds"]
    rows = failing.to_pylist()
    fresh = [r for r in rows if r["known"] != "replay"]
    if not rows:
        runs = _total(data.tables["campaign"], "runs")
        said = (
            f"Nothing broke: every one of the {runs:,} judged runs held."
            if runs
            else ("Nothing broke, and nothing was judged.")
        )
        return [Text(said, heading="What broke")]
    verdicts: dict[str, int] = {}
    for row in fresh:
        verdicts[str(row["outcome"])] = verdicts.get(str(row["outcome"]), 0) + 1
    counted = ", ".join(f"{n:,} {v}" for v, n in sorted(verdicts.items()))
    said = f"{_plural(len(fresh), 'run')} did not hold ({counted or 'none fresh'})"
    replays = len(rows) - len(fresh)
    if replays:
        said += f", and {_plural(replays, 'replay')} of recorded failures failed again"
    said += ". Each is listed with the command that reproduces it."
    known = failing.column("known").to_pylist()
    shown = failing.set_column(
        failing.column_names.index("known"),
        "known",
        pa.array([None if k is None else _KNOWN.get(str(k), str(k)) for k in known]),
    )
    columns = ["violations", *KEY, "outcome", "seed", "known", "reproduce"]
    return [
        Text(said, heading="What broke"),
        Table("By violation kind", kinds, "No violation kind was recorded.", ("kind",)),
        Table("Failing runs", shown.select(columns), "None.", ()),
    ]


def _what_is_new(data: PageData) -> list[Part]:
    facts, failing = data.facts, data.tables["failing_runs"]
    parts: list[Part] = []
    lines: list[str] = []
    if not failing.num_rows:
        lines.append("Nothing failed, so no failure is new.")
    elif facts.campaigns:
        new = sum(1 for k in failing.column("known").to_pylist() if k == "new")
        recorded = sum(1 for k in failing.column("known").to_pylist() if k == "recorded")
        lines.append(
            f"By the failure database: {_plural(new, 'failing run')} showed a failure it had "
            f"not recorded before (a spec — scenario, settings, seed, schedule — never seen "
            f"failing), {recorded:,} one it had. Fresh seeds make nearly every failure new by "
            "this measure."
        )
    previous = facts.previous
    if previous is not None:
        made = f", made {utc_minute(previous.made)}" if previous.made else ""
        news = data.tables["new_since_previous"]
        lines.append(
            f"Against the previous report ({previous.folder}{made}, "
            f"{_plural(previous.failing.num_rows, 'failing run')}): "
            + (
                f"{_plural(news.num_rows, 'violation kind')} in a cell it did not show."
                if news.num_rows
                else "every violation kind in every cell showed there too; nothing is new."
            )
        )
        if news.num_rows:
            parts.append(Table("", news, "None.", (*KEY, "kind")))
    else:
        lines.append(
            "No previous report was given: `lab report … --previous DIR` names the violation "
            "kinds, by cell, that the previous report did not show."
        )
    parts.insert(0, Items(tuple(lines), heading="What is new"))
    return parts + _replays(data.facts.campaigns)


def _replays(campaigns: Sequence[CampaignFacts]) -> list[Part]:
    rows = [
        {"campaign": c.name, "failure": fid, "replay_outcome": outcome, "status": status}
        for c in campaigns
        for fid, outcome, status in c.replays
    ]
    if not rows:
        return []
    outcomes: dict[str, int] = {}
    for row in rows:
        outcome = str(row["replay_outcome"])
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    said = ", ".join(f"{n:,} {o}" for o, n in sorted(outcomes.items()))
    return [
        Text(
            f"{_plural(len(rows), 'recorded failure')} replayed first: {said}.",
            heading="Recorded failures",
        ),
        Table("", pa.Table.from_pylist(rows), "None.", ("campaign", "failure")),
    ]


def summary_section(data: PageData) -> Section:
    """What ran, what broke, what is new."""
    return Section("Summary", (*_what_ran(data), *_what_broke(data), *_what_is_new(data)))
