"""The manual's site for the docs tests: the pages of mkdocs.yml's nav, and a strict build
into a folder of the test's own."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

__all__ = ["ROOT", "build_site", "nav_pages"]

ROOT = Path(__file__).resolve().parent.parent


def nav_pages(config: Path = ROOT / "mkdocs.yml") -> list[tuple[str, str]]:
    """(title, page path under docs/) for every page of the nav, in nav order."""
    raw = yaml.safe_load(config.read_text(encoding="utf-8"))
    return list(_walk(raw["nav"]))


def _walk(items: list[Any]) -> Iterator[tuple[str, str]]:
    for item in items:
        if isinstance(item, str):
            yield item, item
            continue
        for title, value in item.items():
            if isinstance(value, list):
                yield from _walk(value)
            else:
                yield title, value


def build_site(config: Path, out: Path) -> subprocess.CompletedProcess[str]:
    """`mkdocs build --strict` of `config` into `out` (warnings, broken links and anchors
    fail it)."""
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(out)],
        cwd=config.parent,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
