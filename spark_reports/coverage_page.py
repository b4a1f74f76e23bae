"""The page's section on behaviour coverage: how many distinct behaviours each campaign had
reached after each of its runs (a curve that flattens is a campaign that has seen what its
cells show), and each cell's behaviours with the runs since it last found a new one; from
`coverage_curve` and `coverage_cells` (spark_reports.coverage_view)."""

from __future__ import annotations

import pyarrow as pa

from spark_reports.charts import line_figure
from spark_reports.html_page import Chart, Section, Table, Text
from spark_reports.page_data import PageData

__all__ = ["coverage_section"]

_MAX_SERIES = 8
TITLE = "Behaviour coverage"


def _curve_plot(curve: pa.Table) -> Chart:
    rows = curve.to_pylist()
    by_campaign: dict[str, dict[int, int]] = {}
    for row in rows:
        by_campaign.setdefault(str(row["campaign"]), {})[int(row["order"])] = int(row["behaviours"])
    chosen = sorted(by_campaign, key=lambda name: (-len(by_campaign[name]), name))[:_MAX_SERIES]
    length = max(len(by_campaign[name]) for name in chosen)
    labels = [str(n) for n in range(1, length + 1)]
    series = {
        name: [float(v) if (v := by_campaign[name].get(n)) is not None else None
               for n in range(1, length + 1)]
        for name in chosen
    }  # fmt: skip
    plot = line_figure(
        "Distinct behaviours after each run",
        labels,
        series,
        "behaviours",
        empty="No run recorded its behaviours.",
    )
    return Chart("distinct behaviours after each run, by campaign", plot)


def coverage_section(data: PageData) -> Section:
    curve = data.tables.get("coverage_curve")
    cells = data.tables.get("coverage_cells")
    if curve is None or cells is None or curve.num_rows == 0:
        said = (
            "No campaign here measured the behaviours its runs reached (coverage.jsonl, "
            "written by `lab campaign` since it measures them)."
        )
        return Section(TITLE, (Text(said),))
    intro = (
        "Distinct behaviours — what the cluster did, abstracted from each run's events, "
        "history and result — after each run, in the order runs ended; a behaviour counts "
        "once per cell. A curve that flattens is a campaign that has seen what its cells "
        "show; a stalled cell found nothing new in its last runs."
    )
    return Section(
        TITLE,
        (
            Text(intro),
            _curve_plot(curve),
            Table(
                "By cell", cells, "No cell.", ("campaign", "scenario", "target", "backend", "mode")
            ),
        ),
    )
