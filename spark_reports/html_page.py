"""The report as one self-contained HTML page: tables as HTML, charts as base64 PNG."""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa

__all__ = ["Section", "render_page", "table_html"]

_STYLE = """
body { font-family: sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.5em; text-align: right; }
th { background: #f0f0f0; }
td.text { text-align: left; }
code { font-size: 0.9em; }
.flag { color: #b00; font-weight: bold; }
"""


@dataclass(frozen=True)
class Section:
    """A titled part of the page: a paragraph, tables (caption, table), charts (alt, PNG)."""

    title: str
    intro: str
    tables: tuple[tuple[str, pa.Table], ...] = ()
    charts: tuple[tuple[str, bytes], ...] = ()


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
    head = "".join(f"<th>{html.escape(name)}</th>" for name in table.column_names)
    rows = []
    for row in table.slice(0, limit).to_pylist():
        cells = []
        for value in row.values():
            text, is_text = _cell(value)
            kind = ' class="text"' if is_text else ""
            cells.append(f"<td{kind}>{html.escape(text)}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    more = table.num_rows - limit
    note = f"<p>… and {more} more rows (see the CSV).</p>" if more > 0 else ""
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>{note}"


def _image(alt: str, png: bytes) -> str:
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
    for section in sections:
        parts.append(f"<h2>{html.escape(section.title)}</h2>")
        if section.intro:
            parts.append(f"<p>{html.escape(section.intro)}</p>")
        for caption, table in section.tables:
            if caption:
                parts.append(f"<h3>{html.escape(caption)}</h3>")
            parts.append(table_html(table) if table.num_rows else "<p>None.</p>")
        parts.extend(_image(alt, png) for alt, png in section.charts)
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
