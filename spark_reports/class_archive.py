"""The report JVM's class archive: the classes a report session loads, saved once per
environment so that later sessions map them instead of loading, verifying and linking them
again (the JVM's class data sharing). On two cores it takes 2–3 s off every report.

    python -m lab.bench.report_classes    make it if missing (scripts/bootstrap.sh does)

The archive lives in the virtual environment whose pyspark jars it was recorded from,
`<venv>/share/lab-spark-classes/<key>.jsa` (gone with the environment), the key naming the
JVM and those jars (path, size, time of each): the JVM maps an archive only with the very
jars it was recorded with, and silently ignores it otherwise. It is made by a training
session that runs a small report job (compaction and the report over a few synthesized runs)
with the JVM recording the classes it loads, dumped when that JVM exits. A torn archive
would crash the JVM that maps it, so it is recorded under a temporary name and renamed only
after the JVM exited cleanly; archives under another key are removed then.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

__all__ = ["Train", "archive_path", "ensure_archive", "java_options", "publish", "recorded"]

Say = Callable[[str], None]
Train = Callable[[Path], "int | None"]
_QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"
_STALE_PARTIAL_S = 3600.0


def _java() -> Path | None:
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return Path(found).resolve() if found and Path(found).exists() else None


def archive_folder() -> Path:
    """This environment's folder of class archives."""
    return Path(sys.prefix) / "share" / "lab-spark-classes"


def _jars() -> list[Path]:
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        return []
    return sorted((Path(spec.origin).parent / "jars").glob("*.jar"))


def _identity(path: Path) -> str:
    stat = path.stat()
    return f"{path}|{stat.st_size}|{stat.st_mtime_ns}"


def archive_path() -> Path | None:
    """Where the archive for this JVM and these pyspark jars is (None without a JVM)."""
    java = _java()
    if java is None:
        return None
    digest = hashlib.sha256()
    for path in (java, *_jars()):
        digest.update(_identity(path).encode() + b"\n")
    return archive_folder() / f"{digest.hexdigest()[:16]}.jsa"


def java_options() -> str:
    """The driver's options that map the archive, or "" when there is none yet."""
    path = archive_path()
    if path is None or not path.is_file():
        return ""
    return f"-XX:SharedArchiveFile={path} -Xshare:auto {_QUIET}"


def recorded(partial: Path) -> str:
    """The driver's options of a training session: record its classes into `partial`."""
    return f"-XX:ArchiveClassesAtExit={partial} {_QUIET}"


def _remove_stale(folder: Path) -> None:
    """Partial archives of builds that were killed (older than an hour)."""
    now = time.time()
    for partial in folder.glob("*.partial"):
        try:
            if now - partial.stat().st_mtime > _STALE_PARTIAL_S:
                partial.unlink()
        except OSError:
            continue


def publish(partial: Path, final: Path, exit_status: int | None) -> bool:
    """Rename `partial` to `final` if the recording JVM exited cleanly with an archive, and
    remove the archives of other keys beside it (another JVM's, earlier jars'); remove
    `partial` otherwise. True when published."""
    if exit_status == 0 and partial.is_file() and partial.stat().st_size > 0:
        os.replace(partial, final)
        for other in final.parent.glob("*.jsa"):
            if other != final:
                other.unlink(missing_ok=True)
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
    _remove_stale(final.parent)
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
