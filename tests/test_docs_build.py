"""The manual builds: `mkdocs build --strict` with link and anchor validation, every page of
the nav made, and a broken link or anchor fails the build."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml
from docs_helpers import ROOT, build_site, nav_pages


def _is_plugin(entry: object, name: str) -> bool:
    return entry == name or (isinstance(entry, dict) and name in entry)


def test_the_manual_builds_strictly_with_every_nav_page(tmp_path: Path) -> None:
    site = tmp_path / "site"
    done = build_site(ROOT / "mkdocs.yml", site)
    assert done.returncode == 0, done.stderr[-3000:]
    pages = nav_pages()
    assert ("Home", "index.md") in pages
    for _title, page in pages:
        assert (site / page).with_suffix(".html").is_file(), page
    on_disk = {p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")}
    assert on_disk == {page for _title, page in pages}, "every page of docs/ is in the nav"


def test_a_broken_link_or_anchor_fails_the_build(tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(ROOT / "docs", copy / "docs")
    # The links are the point here: the copy is built without the API pages' plugin
    # (reading the lab's source for them takes seconds; the first test builds them).
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    config["plugins"] = [p for p in config["plugins"] if not _is_plugin(p, "mkdocstrings")]
    (copy / "mkdocs.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
    index = copy / "docs" / "index.md"
    text = index.read_text(encoding="utf-8")

    index.write_text(text + "\nSee [nothing](no-such-page.md).\n", encoding="utf-8")
    done = build_site(copy / "mkdocs.yml", tmp_path / "site1")
    assert done.returncode != 0
    assert "no-such-page.md" in done.stderr

    index.write_text(text + "\nSee [no anchor](run-folder.md#no-such-heading).\n")
    done = build_site(copy / "mkdocs.yml", tmp_path / "site2")
    assert done.returncode != 0
    assert "no-such-heading" in done.stderr
