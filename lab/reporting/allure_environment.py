"""environment.properties in an Allure results folder: the runs' target, backend, settings.

Allure shows one environment per report, so every run of a session merges its values
in: a key that differs between runs lists each value once (`seed = 7, 11`). Writers
from several pytest-xdist workers hold an exclusive lock on the results folder while
they merge.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Mapping
from pathlib import Path

from lab.ground.spec import RunSpec

__all__ = [
    "ENVIRONMENT_FILE",
    "environment_of",
    "merge_environment",
    "read_environment",
]

ENVIRONMENT_FILE = "environment.properties"
_SEPARATOR = ", "


def environment_of(spec: RunSpec) -> dict[str, str]:
    """The values a run puts into the report's environment."""
    return {
        "target": spec.target,
        "backend": spec.backend,
        "durability": spec.durability.triplet
        + (" coalescing-sync" if spec.durability.coalescing_sync else ""),
        "nodes": str(spec.topology.nodes),
        "seed": str(spec.seed),
        "lab.version": spec.lab_version,
        "git.revision": spec.git_revision or "unknown",
    }


def _escape(text: str, *, key: bool) -> str:
    out = text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
    if key:
        for char in " =:#!":
            out = out.replace(char, "\\" + char)
    return out


def _unescape(text: str) -> str:
    out: list[str] = []
    chars = iter(text)
    for char in chars:
        if char != "\\":
            out.append(char)
            continue
        following = next(chars, "")
        out.append({"n": "\n", "r": "\r", "t": "\t"}.get(following, following))
    return "".join(out)


def _split_line(line: str) -> tuple[str, str] | None:
    escaped = False
    for i, char in enumerate(line):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char in "=:":
            return _unescape(line[:i].strip()), _unescape(line[i + 1 :].strip())
    return None


def read_environment(results_dir: Path) -> dict[str, str]:
    """The key = value pairs of environment.properties (empty if there is none)."""
    path = results_dir / ENVIRONMENT_FILE
    if not path.is_file():
        return {}
    found: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.lstrip().startswith(("#", "!")):
            continue
        pair = _split_line(line)
        if pair is not None:
            found[pair[0]] = pair[1]
    return found


def _merged(old: str | None, new: str) -> str:
    values = [] if old is None else old.split(_SEPARATOR)
    if new not in values:
        values.append(new)
    return _SEPARATOR.join(values)


def merge_environment(results_dir: Path, values: Mapping[str, str]) -> dict[str, str]:
    """Merge `values` into results_dir/environment.properties; returns what it now holds."""
    results_dir.mkdir(parents=True, exist_ok=True)
    folder = os.open(results_dir, os.O_RDONLY)
    try:
        fcntl.flock(folder, fcntl.LOCK_EX)
        current = read_environment(results_dir)
        for key, value in values.items():
            current[key] = _merged(current.get(key), value)
        text = "".join(
            f"{_escape(k, key=True)} = {_escape(v, key=False)}\n" for k, v in current.items()
        )
        tmp = results_dir / f".{ENVIRONMENT_FILE}.{os.getpid()}"
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, results_dir / ENVIRONMENT_FILE)
    finally:
        os.close(folder)  # also releases the lock
    return current
