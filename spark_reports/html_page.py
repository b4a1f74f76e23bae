"""The report as one self-contained HTML page: tables as HTML, charts as base64 PNG; it loads
nothing from anywhere.

A section is a title and parts in order: sentences (`Text`, `Items`), tables (`Table`) and
charts (`Chart`). Headers are words with units and numbers are written for reading (`columns`);
a table with nothing to show is its `empty` sentence instead (no rows, or no row with a
value: columns with no value at all are left out), and a chart that would say nothing is a
sentence too (`charts.Plot`). The page fits a laptop's width: long cells (folders,
commands) wrap anywhere and charts shrink to the page.
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa

from spark_reports.charts import Plot
from spark_reports.columns import Format, header, shown

__all__ = [
    "Chart",
    "Items",
    "Part",
    "Section",
    "Table",
    "Text",
    "render_page",
    "section_id",
    "split_columns",
    "table_html",
    "visible",
]

_STYLE = """
body { font-family: sans-serif; margin: 2em; color: #222; max-width: 90em; }
nav { margin: 0 0 1.5em; }
nav a { margin-right: 1em; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.85em; max-width: 100%; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.4em; text-align: right; }
th { background: #f0f0f0; font-size: 0.92em; }
td.text, td.list { text-align: left; }
td.long, td.code { text-align: left; overflow-wrap: anywhere; min-width: 8em; }
img { max-width: 100%; height: auto; }
p.chart, p.empty { font-style: italic; }
p.lead { color: #555; }
code { font-size: 0.9em; }
"""

_LONG = 24
"""Text cells longer than this may wrap anywhere; shorter ones at spaces and hyphens only,
so that a narrow column never splits a word."""


@dataclass(frozen=True)
class Text:
    """A paragraph; with `heading`, under a heading of its own."""

    text: str
    heading: str = ""


@dataclass(frozen=True)
class Items:
    """A list of sentences; with `heading`, under a heading of its own."""

    items: tuple[str, ...]
    heading: str = ""


@dataclass(frozen=True)
class Table:
    """A captioned table, or the `empty` sentence when it has nothing to show. `keys` name a
    row (a row whose other cells are all empty is left out); `default_format` is how the
    numbers of columns `columns.COLUMNS` does not know are written (a pivot's)."""

    caption: str
    table: pa.Table
    empty: str
    keys: tuple[str, ...] = ()
    default_format: Format = "text"


@dataclass(frozen=True)
class Chart:
    """A chart (PNG) with its alternative text, or the sentence that replaces it."""

    alt: str
    plot: Plot


Part = Text | Items | Table | Chart


@dataclass(frozen=True)
class Section:
    """A titled part of the page."""

    title: str
    parts: tuple[Part, ...]


def _nothing(value: object) -> bool:
    return value is None or value == [] or value == ""


def visible(table: pa.Table, keys: Sequence[str] = ()) -> pa.Table:
    """`table` without the columns that have no value at all (nulls, empty lists), and
    without the rows whose cells beyond `keys` are all empty; no rows when nothing is left
    to show."""
    names = [
        n
        for n in table.column_names
        if n in keys or not all(_nothing(v) for v in table.column(n).to_pylist())
    ]
    values = [n for n in names if n not in keys]
    if not values:
        return table.select(names).slice(0, 0)
    kept = table.select(names)
    rows = [
        i
        for i, row in enumerate(kept.select(values).to_pylist())
        if not all(_nothing(v) for v in row.values())
    ]
    return kept.take(rows)


def table_html(table: pa.Table, *, default_format: Format = "text", limit: int = 500) -> str:
    """`table` as an HTML table (at most `limit` rows, the rest counted)."""
    head = "".join(
        f"<th>{html.escape(header(name)).replace(',', ',<wbr>')}</th>"
        for name in table.column_names
    )
    rows = []
    for row in table.slice(0, limit).to_pylist():
        cells = []
        for name, value in row.items():
            text, format = shown(name, value, default_format)
            kind = "long" if format == "text" and len(text) > _LONG else format
            escaped = html.escape(text)
            if format == "code" and text:
                escaped = f"<code>{escaped}</code>"
            cells.append(f'<td class="{kind}">{escaped}</td>')
        rows.append("<tr>" + "".join(cells) + "</tr>")
    more = table.num_rows - limit
    note = f"<p>… and {more:,} more rows (see the CSV).</p>" if more > 0 else ""
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>{note}"


def split_columns(
    table: pa.Table,
    keys: Sequence[str],
    first: Sequence[str],
    captions: tuple[str, str],
    empty: str,
) -> tuple[Table, Table]:
    """A wide table as two captioned tables that fit a page: `keys` and `first`, then
    `keys` and every other column (CSV and Parquet keep the whole table)."""
    names = table.column_names
    head = [c for c in keys if c in names]
    one = [c for c in first if c in names and c not in head]
    rest = [c for c in names if c not in head and c not in one]
    return (
        Table(captions[0], table.select([*head, *one]), empty, tuple(head)),
        Table(captions[1], table.select([*head, *rest]), empty, tuple(head)),
    )


def _chart(alt: str, plot: Plot) -> str:
    if isinstance(plot, str):
        return f'<p class="chart">{html.escape(plot)}</p>'
    data = base64.b64encode(plot).decode("ascii")
    return f'<p><img alt="{html.escape(alt)}" src="data:image/png;base64,{data}"></p>'


def _part_html(part: Part) -> str:
    if isinstance(part, Text):
        heading = f"<h3>{html.escape(part.heading)}</h3>\n" if part.heading else ""
        return f"{heading}<p>{html.escape(part.text)}</p>"
    if isinstance(part, Items):
        heading = f"<h3>{html.escape(part.heading)}</h3>\n" if part.heading else ""
        return (
            heading + "<ul>" + "".join(f"<li>{html.escape(i)}</li>" for i in part.items) + "</ul>"
        )
    if isinstance(part, Chart):
        return _chart(part.alt, part.plot)
    heading = f"<h3>{html.escape(part.caption)}</h3>\n" if part.caption else ""
    shown_rows = visible(part.table, part.keys)
    if not shown_rows.num_rows:
        return f'{heading}<p class="empty">{html.escape(part.empty)}</p>'
    return heading + table_html(shown_rows, default_format=part.default_format)


def section_id(title: str) -> str:
    """The HTML id of a section's heading: its title, lower case, words joined by `-`."""
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def _section_html(section: Section) -> str:
    parts = [f'<h2 id="{section_id(section.title)}">{html.escape(section.title)}</h2>']
    parts.extend(_part_html(part) for part in section.parts)
    return "\n".join(parts)


def render_page(title: str, lead: Sequence[str], sections: Sequence[Section]) -> str:
    """The whole page: title, the lead's lines, links to the sections, the sections."""
    links = " ".join(
        f'<a href="#{section_id(s.title)}">{html.escape(s.title)}</a>' for s in sections
    )
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        *(f'<p class="lead">{html.escape(line)}</p>' for line in lead),
        f"<nav>{links}</nav>",
    ]
    parts.extend(_section_html(section) for section in sections)
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
