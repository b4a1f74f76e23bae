"""Where the lab keeps the distributions it fetches (lab.targets.maven.cache_root): its
checkout's `.lab/cache`, the user's cache for a lab installed as a package, `$LAB_CACHE`
over both; and a distribution's home archived once for the hosts."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

import lab.targets.maven as maven


def test_a_checkout_keeps_its_cache_in_it_an_installed_lab_in_the_users(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LAB_CACHE", raising=False)
    assert maven.cache_root() == maven.LAB_ROOT / ".lab" / "cache"  # this checkout
    installed = tmp_path / "site-packages"
    installed.mkdir()
    monkeypatch.setattr(maven, "LAB_ROOT", installed)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert maven.cache_root() == tmp_path / "xdg" / "lab" / "distributions"
    monkeypatch.setenv("LAB_CACHE", str(tmp_path / "mine"))
    assert maven.cache_root() == tmp_path / "mine"


def test_a_home_is_archived_once_beside_it(tmp_path: Path) -> None:
    home = tmp_path / "x" / "home"
    (home / "lib").mkdir(parents=True)
    (home / "lib" / "a.jar").write_bytes(b"jar")
    archive = maven.home_archive(home, "test-archive")
    assert archive == tmp_path / "x" / "home.tar.gz"
    with tarfile.open(archive) as opened:
        assert sorted(opened.getnames()) == ["lib", "lib/a.jar"]
    made = archive.stat().st_mtime_ns
    (home / "lib" / "b.jar").write_bytes(b"later")
    assert maven.home_archive(home, "test-archive") == archive
    assert archive.stat().st_mtime_ns == made  # made once: not again
