"""The report JVM's class archive: the classes a report session loads, saved once per machine
so that later sessions map them instead of loading, verifying and linking them again (the
JVM's class data sharing). On two cores it takes 2–3 s off every report.

    python -m lab.bench.report_classes    make it if missing (scripts/bootstrap.sh does)

The archive is `user_cache()/spark-classes/<key>.jsa`, the key naming the JVM and the pyspark
release it was made with. It is made by a training session that runs a small report job
(compaction and the report over a few synthesized runs) with the JVM recording the classes it
loads, dumped when that JVM exits. A torn archive would crash the JVM that maps it, so it is
recorded under a temporary name and renamed only after the JVM exited cleanly. A session
uses the archive when it exists; the JVM itself refuses one made by another JVM or with other
jars (and then loads its classes as before, silently).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from lab.ground.paths import user_cache

__all__ = ["Train", "archive_path", "ensure_archive", "java_options", "publish", "recorded"]

Say = Callable[[str], None]
Train = Callable[[Path], "int | None"]
_QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"
_STALE_PARTIAL_S = 3600.0


def _java() -> Path | None:
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return Path(found).resolve() if found and Path(found).exists() else None


def archive_path() -> Path | None:
    """Where the archive for this JVM and pyspark release is (None without a JVM)."""
    java = _java()
    if java is None:
        return None
    stat = java.stat()
    identity = f"{java}|{stat.st_size}|{stat.st_mtime_ns}|{importlib.metadata.version('pyspark')}"
    key = hashlib.sha256(identity.encode()).hexdigest()[:16]
    return user_cache() / "spark-classes" / f"{key}.jsa"


def java_options() -> str:
    """The driver's options that map the archive, or "" when there is none yet."""
    path = archive_path()
    if path is None or not path.is_file():
        return ""
    return f"-XX:SharedArchiveFile={path} -Xshare:auto {_QUIET}"


def recorded(partial: Path) -> str:
    """The driver's options of a training session: record its classes into `partial`."""
    return f"-XX:ArchiveClassesAtExit={partial} {_QUIET}"


def _remove_stale_partials(folder: Path) -> None:
    """Partial archives of builds that were killed (older than an hour)."""
    now = time.time()
    for partial in folder.glob("*.partial"):
        try:
            if now - partial.stat().st_mtime > _STALE_PARTIAL_S:
                partial.unlink()
        except OSError:
            continue


def publish(partial: Path, final: Path, exit_status: int | None) -> bool:
    """Rename `partial` to `final` if the recording JVM exited cleanly with an archive;
    remove it otherwise. True when published."""
    if exit_status == 0 and partial.is_file() and partial.stat().st_size > 0:
        os.replace(partial, final)
        return True
    partial.unlink(missing_ok=True)
    return False


def ensure_archive(train: Train, say: Say) -> Path | None:
    """Make the archive if it is missing (about a minute on two cores), `train` running the
    training session with its JVM recording into the file it is given; the archive's path."""
    final = archive_path()
    if final is None:
        say("report classes: no JVM (java) found; skipped")
        return None
    if final.is_file():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_partials(final.parent)
    partial = final.with_name(f"{final.stem}.{os.getpid()}.partial")
    say(f"report classes: recording the report JVM's classes into {final} (once, about a minute)")
    status = None
    try:
        status = train(partial)
    finally:
        published = publish(partial, final, status)
    if not published:
        say(f"report classes: the recording JVM exited with {status}; no archive (reports run)")
        return None
    return final
