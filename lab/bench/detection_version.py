"""The generator's version: a hash of the source files that decide a campaign's schedules, so
the detection benchmark's store (lab.bench.detection_store) never mixes trials of two
generators. The files are named here, in one place:

    GENERATOR_SOURCES    glob patterns relative to the lab's root
    generator_files()    the files they match today, in order
    generator_version()  "g-" and 12 hex digits: what the files say, not when they were saved

A file a pattern names explicitly that is missing counts as missing (its absence is part of
the hash); a module added under scenarios/ or lab/campaign/ whose name starts with
`random_` or `pattern` is taken in by the globs.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from lab.ground.paths import LAB_ROOT
from lab.ground.spec_words import git_revision

__all__ = ["GENERATOR_SOURCES", "generator_files", "generator_version", "lab_commit"]

_CAMPAIGN = (
    "guide",
    "mutations",
    "candidates",
    "bandit",
    "behaviour",
    "client_behaviour",
    "coverage",
    "corpus",
    "workloads",
    "run_settings",
    "windows",
    "danger",
)
GENERATOR_SOURCES: tuple[str, ...] = (
    "scenarios/base.py",
    "scenarios/random_*.py",
    "scenarios/pattern*.py",
    *(f"lab/campaign/{name}.py" for name in _CAMPAIGN),
    "lab/campaign/random_*.py",
    "lab/campaign/pattern*.py",
    "faults/triggers.py",  # when a step that waits for the cluster strikes
    "lab/ground/faultops.py",  # what a step may wait for, how far behind is catching up
    "lab/judge/bounds.py",  # the judged lease a master cut off is measured against
)


def generator_files(root: Path = LAB_ROOT) -> list[str]:
    """The files (relative to `root`, sorted) the patterns name: every match of a glob, and
    each plain name whether it exists or not."""
    found: set[str] = set()
    for pattern in GENERATOR_SOURCES:
        if any(c in pattern for c in "*?["):
            found.update(str(p.relative_to(root)) for p in root.glob(pattern) if p.is_file())
        else:
            found.add(pattern)
    return sorted(found)


def generator_version(root: Path = LAB_ROOT) -> str:
    """A hash of the generator's files under `root`: their names and their contents."""
    digest = hashlib.sha256()
    for name in generator_files(root):
        path = root / name
        digest.update(name.encode("utf-8") + b"\0")
        digest.update(path.read_bytes() if path.is_file() else b"(missing)")
        digest.update(b"\0")
    return "g-" + digest.hexdigest()[:12]


def lab_commit(root: Path = LAB_ROOT) -> str:
    """The lab's git commit (its first 12 digits), `unknown` outside a checkout."""
    revision = git_revision(root)
    return revision[:12] if revision else "unknown"
