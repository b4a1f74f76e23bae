"""docs/cli.md is generated from the `lab` command's own parser and the pytest plugin's
options (lab.cli.reference): the page in the repository is exactly what the generator makes
now, and every long option a command's `--help` prints is on it. A failure says how to make
the page again."""

from __future__ import annotations

import argparse
import difflib
import re
from collections.abc import Iterator

from conftest import ROOT

from lab.cli.main import _build_parser
from lab.cli.reference import pytest_options, render

PAGE = ROOT / "docs" / "cli.md"
AGAIN = "make it again: .venv/bin/python -m lab.cli.reference docs/cli.md"


def _parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _parsers(sub)


def _missing(page: str) -> list[str]:
    """`lab COMMAND --option` for every long option a `--help` prints (its parser's
    options) that has no row in the command's section of the page (from its heading to the
    next)."""
    missing = []
    parser, _ = _build_parser()
    for sub in list(_parsers(parser))[1:]:
        heading = f"`{sub.prog}`\n"
        start = page.find(heading)
        if start < 0:
            missing.append(sub.prog)
            continue
        end = page.find("\n## ", start)
        nested = page.find("\n### ", start + len(heading))
        section = page[start : min(x for x in (end, nested, len(page)) if x >= 0)]
        options = {
            o
            for a in sub._actions
            if a.help != argparse.SUPPRESS
            for o in a.option_strings
            if o.startswith("--") and o != "--help"
        }
        rows = "\n".join(line for line in section.splitlines() if line.startswith("| `"))
        missing += [
            f"{sub.prog} {o}"
            for o in sorted(options)
            if not re.search(rf"^\| `[^|]*{re.escape(o)}(?![\w-])", rows, re.MULTILINE)
        ]
    missing += [names[0] for names, _ in pytest_options() if f"`{names[0]}" not in page]
    return missing


def test_the_page_is_what_the_parser_makes() -> None:
    made, page = render(), PAGE.read_text(encoding="utf-8")
    diff = list(
        difflib.unified_diff(page.splitlines(), made.splitlines(), "docs/cli.md", "made", n=1)
    )
    assert page == made, f"docs/cli.md differs from the parser ({AGAIN}):\n" + "\n".join(diff[:40])


def test_every_command_and_option_help_prints_is_on_the_page() -> None:
    missing = _missing(PAGE.read_text(encoding="utf-8"))
    assert not missing, f"docs/cli.md lacks {missing} ({AGAIN})"


def test_a_missing_option_or_command_is_caught() -> None:
    page = render()
    without = "\n".join(line for line in page.splitlines() if "`--tools-dir" not in line)
    assert _missing(without) == ["lab allure --tools-dir"]
    renamed = page.replace("## `lab nightly`", "## `lab night`")
    assert "lab nightly" in _missing(renamed)
    unplugged = page.replace("`--lab-campaign-targets", "`--lab-campaign-target ")
    assert _missing(unplugged) == ["--lab-campaign-targets"]
