"""The report JVM's class archive (`spark_reports.class_archive`): where it lives, when a
session maps it, that only a cleanly exited recording becomes the archive, and that the
set-up made one that the tests' own session maps."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest
from spark_helpers import run

from spark_reports import class_archive
from spark_reports.extract import rollup_groups


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A virtual environment of the test's own, with pyspark's real jars."""
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "venv"))
    return tmp_path / "venv" / "share" / "lab-spark-classes"


def _fake_java(home: Path, content: str) -> Path:
    (home / "bin").mkdir(parents=True)
    java = home / "bin" / "java"
    java.write_text(content)
    return java


def test_the_archive_is_named_by_the_jvm(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_java(tmp_path / "jdk-a", "a")
    _fake_java(tmp_path / "jdk-b", "bb")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk-a"))
    first = class_archive.archive_path()
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk-b"))
    second = class_archive.archive_path()
    assert first is not None and second is not None
    assert first.parent == second.parent == cache
    assert first != second and first.suffix == ".jsa"
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    assert class_archive.archive_path() is None
    assert class_archive.java_options() == ""


def test_the_archive_is_named_by_the_jars(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The JVM maps an archive only with the jars it was recorded with: another install of
    the same release (a fresh environment) gets another archive."""
    _fake_java(tmp_path / "jdk", "java")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    jars = tmp_path / "jars"
    jars.mkdir()
    (jars / "spark-core.jar").write_bytes(b"classes")
    monkeypatch.setattr(class_archive, "_jars", lambda: sorted(jars.glob("*.jar")))
    first = class_archive.archive_path()
    os.utime(jars / "spark-core.jar", ns=(1, 1))  # reinstalled: same name, another time
    assert class_archive.archive_path() != first


def test_a_session_maps_the_archive_only_once_it_exists(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_java(tmp_path / "jdk", "java")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    assert class_archive.java_options() == ""
    path = class_archive.archive_path()
    assert path is not None
    cache.mkdir(parents=True)
    path.write_bytes(b"archive")
    assert f"-XX:SharedArchiveFile={path}" in class_archive.java_options()
    assert "-Xshare:auto" in class_archive.java_options()


@pytest.mark.parametrize("status", [1, -9, None])
def test_an_unclean_recording_is_removed_not_published(tmp_path: Path, status: int | None) -> None:
    partial, final = tmp_path / "k.123.partial", tmp_path / "k.jsa"
    partial.write_bytes(b"torn")
    assert not class_archive.publish(partial, final, status)
    assert not partial.exists() and not final.exists()


def test_a_clean_recording_becomes_the_archive(tmp_path: Path) -> None:
    partial, final = tmp_path / "k.123.partial", tmp_path / "k.jsa"
    older = tmp_path / "other-jvm.jsa"
    older.write_bytes(b"old")
    partial.write_bytes(b"classes")
    assert class_archive.publish(partial, final, 0)
    assert final.read_bytes() == b"classes" and not partial.exists()
    assert not older.exists()  # another key's archive goes once this one is in place
    empty = tmp_path / "k.124.partial"
    empty.write_bytes(b"")
    assert not class_archive.publish(empty, tmp_path / "other.jsa", 0)


def test_an_archive_that_exists_is_not_made_again(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_java(tmp_path / "jdk", "java")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    path = class_archive.archive_path()
    assert path is not None
    cache.mkdir(parents=True)
    path.write_bytes(b"archive")
    stale, fresh = cache / "x.1.partial", cache / "x.2.partial"
    stale.write_bytes(b"")
    fresh.write_bytes(b"")
    os.utime(stale, (time.time() - 7200, time.time() - 7200))
    said: list[str] = []
    trained: list[Path] = []

    def train(partial: Path) -> int:
        trained.append(partial)
        return 0

    assert class_archive.ensure_archive(train, said.append) == path
    assert said == [] and trained == [] and stale.exists()  # nothing to make, nothing touched
    path.unlink()
    class_archive._remove_stale(cache)
    assert not stale.exists() and fresh.exists()


@pytest.mark.parametrize("status", [0, 1])
def test_the_training_sessions_recording_is_published_when_clean(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, status: int
) -> None:
    _fake_java(tmp_path / "jdk", "java")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    path = class_archive.archive_path()
    assert path is not None

    def train(partial: Path) -> int:
        assert partial.parent == cache and partial.name.endswith(".partial")
        partial.write_bytes(b"classes")  # what the recording JVM dumps as it exits
        return status

    said: list[str] = []
    made = class_archive.ensure_archive(train, said.append)
    assert (made == path) is (status == 0)
    assert path.is_file() is (status == 0)
    assert list(cache.glob("*.partial")) == []
    assert "recording" in said[0] and (status == 0 or "exited with 1" in said[-1])


def test_runs_alike_are_grouped_under_their_smallest_id() -> None:
    records = [
        run("s/3"),
        run("s/1"),
        run("s/2", producers=4),
        run("s/4", date="2026-01-06"),
        run("s/5"),
    ]
    paths = [f"/runs/s/{n}/history.parquet" for n in (3, 1, 2, 4)]  # s/5 has no copy
    groups = sorted(rollup_groups(records, paths))
    assert groups == [
        ("s/1", ["/runs/s/1/history.parquet", "/runs/s/3/history.parquet"]),
        ("s/2", ["/runs/s/2/history.parquet"]),
        ("s/4", ["/runs/s/4/history.parquet"]),
    ]


@pytest.mark.spark
def test_the_set_up_made_an_archive_the_tests_session_maps(spark: object) -> None:
    """scripts/bootstrap.sh makes the archive for this environment's jars; the session the
    Spark tests share maps it (the archive is among the files the JVM has mapped)."""
    path = class_archive.archive_path()
    assert path is not None, "no JVM found, yet Spark runs"
    assert path.is_file(), f"scripts/bootstrap.sh made no class archive at {path}"
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    assert gateway is not None
    maps = Path(f"/proc/{gateway.proc.pid}/maps").read_text()
    assert str(path) in maps
