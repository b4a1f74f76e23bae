"""The report JVM's class archive (`spark_reports.class_archive`): where it lives (a new JVM or
new jars, a new archive), when a session maps it, when a driver records it, that only a
cleanly exited recording becomes the archive, that a first report runs without it and leaves
it for the next one, and that the tests' own session maps it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from spark_helpers import run

from lab.bench.synth_runs import synthesize_runs
from spark_reports import class_archive
from spark_reports.extract import rollup_groups

ROOT = Path(__file__).resolve().parent.parent


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


def test_a_recording_is_planned_only_where_it_is_needed(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No JVM, or an archive already: nothing to record. Missing: the driver records into a
    partial file named by this process, made at once so that others see it; while it is
    there (and this process alive) no other driver records, and a partial whose process is
    gone is removed."""
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    assert class_archive.plan_recording() is None
    _fake_java(tmp_path / "jdk", "java")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    path = class_archive.archive_path()
    assert path is not None
    gone = subprocess.Popen([sys.executable, "-c", ""])
    gone.wait()
    cache.mkdir(parents=True)
    left = cache / f"{path.stem}.{gone.pid}.partial"  # a report killed before its JVM exited
    left.write_bytes(b"torn")
    recording = class_archive.plan_recording()
    assert recording is not None and not left.exists()
    assert recording.final == path
    assert recording.partial == cache / f"{path.stem}.{os.getpid()}.partial"
    assert recording.partial.is_file() and recording.partial.stat().st_size == 0
    assert class_archive.plan_recording() is None  # one recording at a time
    assert "-XX:ArchiveClassesAtExit=" in class_archive.recorded(recording.partial)
    assert not class_archive.publish(recording.partial, path, 0)  # the JVM dumped nothing
    path.write_bytes(b"archive")
    assert class_archive.plan_recording() is None


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
def test_the_tests_session_maps_the_archive_or_records_it(spark: object) -> None:
    """The session the Spark tests share is a report's driver: its JVM maps the archive made
    for this environment's JVM and jars, or, in an environment without one, records it (put
    in place when the session ends). Read from the JVM itself (/proc), not from what it was
    asked to do."""
    from pyspark import SparkContext

    path = class_archive.archive_path()
    assert path is not None, "no JVM found, yet Spark runs"
    gateway = SparkContext._gateway
    assert gateway is not None
    pid = gateway.proc.pid
    command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    recording = [a for a in command if a.startswith(b"-XX:ArchiveClassesAtExit=")]
    asked = [a for a in command if a == f"-XX:SharedArchiveFile={path}".encode()]
    if recording:
        partial = Path(recording[0].split(b"=", 1)[1].decode())
        assert partial.parent == path.parent and partial.name.startswith(path.stem)
        assert partial.is_file()  # made at once: others see the recording
    elif asked:
        assert class_archive.mapped_by(pid, path), f"the session's JVM did not map {path}"
    else:
        # The third way a driver starts: another process (a report, another worker's
        # session) was recording the archive, so this one runs without it.
        assert not any(a.startswith(b"-XX:SharedArchiveFile=") for a in command), command
        pytest.skip("another process was recording the class archive as this session began")


_REPORT_IN_AN_ENVIRONMENT_OF_ITS_OWN = """\
import sys
sys.prefix = sys.argv[1]  # where class archives live: an environment without one
from lab.cli.main import main
raise SystemExit(main(["report", *sys.argv[2:]]))
"""


@pytest.mark.spark
@pytest.mark.long
def test_a_first_report_runs_without_the_archive_and_leaves_it_for_the_next(
    tmp_path: Path,
) -> None:
    """`lab report` as a user runs it, in an environment without an archive: the report is
    made, its JVM records the classes as it ends, and the archive is in place after it
    (only then: nothing partial is left); the next report's JVM maps it. Long: two fresh
    report processes and a recording (the default suite sees the same through its own
    session, which maps the archive or records it)."""
    runs = tmp_path / "runs"
    synthesize_runs(runs, runs=4, operations_per_run=120, seed=5, partial=0)
    prefix = tmp_path / "venv"

    def report(out: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-c", _REPORT_IN_AN_ENVIRONMENT_OF_ITS_OWN, str(prefix)]
        arguments = [str(runs), "--out", str(tmp_path / out), "--master", "local[2]"]
        return subprocess.run(
            [*command, *arguments],
            cwd=ROOT, capture_output=True, text=True, timeout=900, check=False,
        )  # fmt: skip

    first = report("first")
    assert first.returncode == 0, first.stderr[-3000:]
    assert "no class archive yet: recording one" in first.stderr
    assert (tmp_path / "first" / "report.html").is_file()
    archives = list((prefix / "share" / "lab-spark-classes").iterdir())
    assert len(archives) == 1 and archives[0].suffix == ".jsa", archives
    assert f"class archive recorded into {archives[0]}" in first.stderr
    second = report("second")
    assert second.returncode == 0, second.stderr[-3000:]
    assert "(class archive mapped)" in second.stderr  # read from the JVM's /proc maps
