"""The report JVM's class archive: the classes a report session loads, saved once per
environment so that later sessions map them instead of loading, verifying and linking them
again (the JVM's class data sharing). On two cores it takes 2–3 s off every report.

Nothing makes it ahead of time: the first report of an environment runs without it, its
driver's JVM recording the classes it loads (`plan_recording`), dumped when that JVM exits
at the end of the report (`session.finish_driver`); every later report maps it.

The archive lives in the virtual environment whose pyspark jars it was recorded from,
`<venv>/share/lab-spark-classes/<key>.jsa` (gone with the environment), the key naming the
JVM and those jars (path, size, time of each): the JVM maps an archive only with the very
jars it was recorded with, and silently ignores it otherwise, so a new JVM or new jars mean
a new key, and the next report records again. A torn archive would crash the JVM that maps
it, so a recording goes to `<key>.<pid>.partial` and is renamed into place only after its
JVM exited cleanly (`publish`); archives under another key are removed then, and so are the
partial recordings of processes that are gone (a report killed before its JVM exited).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from lab.ground.children import process_alive

__all__ = [
    "Recording",
    "archive_folder",
    "archive_path",
    "java_options",
    "mapped_by",
    "plan_recording",
    "publish",
    "recorded",
    "remove_stale",
]

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
    """The driver's options that record its classes into `partial` when its JVM exits."""
    return f"-XX:ArchiveClassesAtExit={partial} {_QUIET}"


@dataclass(frozen=True)
class Recording:
    """A driver JVM recording its classes into `partial`, to become `final` once it exited
    cleanly."""

    partial: Path
    final: Path


def _owner(partial: Path) -> int | None:
    """The pid in `<key>.<pid>.partial` (the process that started the recording JVM)."""
    number = partial.name.removesuffix(".partial").rpartition(".")[2]
    return int(number) if number.isdigit() else None


def remove_stale(folder: Path) -> None:
    """Partial recordings left by processes that are gone (killed before their JVM exited),
    and any older than an hour (a pid reused since)."""
    now = time.time()
    for partial in folder.glob("*.partial"):
        owner = _owner(partial)
        try:
            old = now - partial.stat().st_mtime > _STALE_PARTIAL_S
            if old or owner is None or (owner != os.getpid() and not process_alive(owner)):
                partial.unlink()
        except OSError:
            continue


def plan_recording() -> Recording | None:
    """A recording for a driver about to start, when there is a JVM and no archive for it
    yet, and no other live process is recording one (None otherwise: the driver maps the
    archive, runs without it while another records it, or there is no JVM to record). The
    partial file is made at once, empty, so that others see the recording."""
    final = archive_path()
    if final is None or final.is_file():
        return None
    final.parent.mkdir(parents=True, exist_ok=True)
    remove_stale(final.parent)
    if any(final.parent.glob(f"{final.stem}.*.partial")):
        return None
    partial = final.with_name(f"{final.stem}.{os.getpid()}.partial")
    partial.touch()
    return Recording(partial, final)


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


def mapped_by(pid: int, path: Path) -> bool:
    """Whether process `pid` has `path` mapped (Linux's /proc/PID/maps): what the JVM did,
    not what it was asked to do (it ignores an archive it cannot use)."""
    try:
        maps = Path(f"/proc/{pid}/maps").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return str(path) in maps
