"""The report as one self-contained HTML page: tables as HTML, charts as base64 PNG.

The page fits a laptop's width: long cells (folders, commands, reasons) wrap anywhere,
column names wrap at their underscores, charts shrink to the page; a chart that would say
nothing is a sentence instead (`charts.Plot`).
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa

__all__ = [
    "Section",
    "insert_sections",
    "render_page",
    "section_id",
    "split_columns",
    "table_html",
]

_STYLE = """
body { font-family: sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.85em; max-width: 100%; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.4em; text-align: right; }
th { background: #f0f0f0; font-size: 0.92em; }
td.text { text-align: left; }
td.long { overflow-wrap: anywhere; min-width: 8em; }
img { max-width: 100%; height: auto; }
p.chart { font-style: italic; }
code { font-size: 0.9em; }
.flag { color: #b00; font-weight: bold; }
"""


_LONG = 24
"""Text cells longer than this may wrap anywhere (folders, commands); shorter ones at spaces
and hyphens only, so that a narrow column never splits a word."""


@dataclass(frozen=True)
class Section:
    """A titled part of the page: a paragraph, tables (caption, table), charts (alt, and a
    PNG or the sentence that replaces it)."""

    title: str
    intro: str
    tables: tuple[tuple[str, pa.Table], ...] = ()
    charts: tuple[tuple[str, bytes | str], ...] = ()


def _cell(value: object) -> tuple[str, bool]:
    if value is None:
        return "", False
    if isinstance(value, float):
        return f"{value:,.3f}".rstrip("0").rstrip("."), False
    if isinstance(value, bool):
        return ("yes" if value else "no"), True
    if isinstance(value, int):
        return f"{value:,}", False
    if isinstance(value, list):
        return "; ".join(str(v) for v in value), True
    return str(value), True


def table_html(table: pa.Table, *, limit: int = 500) -> str:
    """`table` as an HTML table (at most `limit` rows, the rest counted)."""
    head = "".join(
        f"<th>{html.escape(name).replace('_', '_<wbr>')}</th>" for name in table.column_names
    )
    rows = []
    for row in table.slice(0, limit).to_pylist():
        cells = []
        for value in row.values():
            text, is_text = _cell(value)
            kind = (
                ""
                if not is_text
                else ' class="text long"'
                if len(text) > _LONG
                else ' class="text"'
            )
            cells.append(f"<td{kind}>{html.escape(text)}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    more = table.num_rows - limit
    note = f"<p>… and {more} more rows (see the CSV).</p>" if more > 0 else ""
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>{note}"


def split_columns(
    table: pa.Table, keys: Sequence[str], first: Sequence[str], captions: tuple[str, str]
) -> tuple[tuple[str, pa.Table], tuple[str, pa.Table]]:
    """A wide table as two captioned tables that fit a page: `keys` and `first`, then
    `keys` and every other column (CSV and Parquet keep the whole table)."""
    names = table.column_names
    head = [c for c in keys if c in names]
    one = [c for c in first if c in names and c not in head]
    rest = [c for c in names if c not in head and c not in one]
    return (captions[0], table.select([*head, *one])), (captions[1], table.select([*head, *rest]))


def _image(alt: str, png: bytes | str) -> str:
    if isinstance(png, str):
        return f'<p class="chart">{html.escape(png)}</p>'
    data = base64.b64encode(png).decode("ascii")
    return f'<p><img alt="{html.escape(alt)}" src="data:image/png;base64,{data}"></p>'


def render_page(title: str, summary: Sequence[str], sections: Sequence[Section]) -> str:
    """The whole page; every string is escaped."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        "<ul>" + "".join(f"<li>{html.escape(line)}</li>" for line in summary) + "</ul>",
    ]
    parts.extend(_section_html(section) for section in sections)
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def section_id(title: str) -> str:
    """The HTML id of a section's heading: its title, lower case, words joined by `-`."""
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def _section_html(section: Section) -> str:
    parts = [f'<h2 id="{section_id(section.title)}">{html.escape(section.title)}</h2>']
    if section.intro:
        parts.append(f"<p>{html.escape(section.intro)}</p>")
    for caption, table in section.tables:
        if caption:
            parts.append(f"<h3>{html.escape(caption)}</h3>")
        parts.append(table_html(table) if table.num_rows else "<p>None.</p>")
    parts.extend(_image(alt, png) for alt, png in section.charts)
    return "\n".join(parts)


def insert_sections(page: str, sections: Sequence[Section], *, before: str) -> str:
    """`page` (from `render_page`) with `sections` put before the section titled `before`,
    or at the end when it has none."""
    added = "\n".join(_section_html(section) for section in sections) + "\n"
    anchor = f'<h2 id="{section_id(before)}">'
    at = page.find(anchor)
    if at < 0:
        at = page.rindex("</body>")
    return page[:at] + added + page[at:]
