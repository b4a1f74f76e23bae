"""Scratch copies of the lab's tree, with a zoo bug applied, and the `lab` that runs them.

The product's tree is never changed: a bug (lab.bench.zoo) is applied to a copy of its
packages, as a mutation tool does, and the copy's own `lab` runs it. Its nodes are
`python -m broker_ref` processes started from the copy's folder and its cluster manager is
the copy's `lab.manager`: `lab` runs with the copy as its working folder and as
PYTHONPATH, so every module the run imports — in the lab process, in the processes it
forks, in the nodes and workers it starts — comes from the copy.

    with ScratchRoot() as root:                  # a temporary folder, removed at the end
        tree = root.tree("ack-quorum-off-by-one", bug)   # a copy, the bug applied
        done = subprocess.run(*tree.lab("run", "--spec", …))   # argv, and cwd / env

A scratch root's name says its owner (`lab-zoo-<pid>-<start time>-…`): when the owner was
killed with SIGKILL (no `finally` ran), the next `lab` command removes it (`reap_scratch`,
called by lab.cli.orphans), once the processes still running from it — a campaign's run that
outlived its campaign, and its nodes — were stopped as Ctrl-C stops them (SIGTERM: they heal
and stop), or killed 30 s later.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from lab.bench.zoo import CANARY_MODULE, Bug
from lab.ground.errors import InputError
from lab.ground.paths import LAB_ROOT

__all__ = [
    "CANARY_ENV",
    "COPIED",
    "PREFIX",
    "BugDoesNotApply",
    "ScratchRoot",
    "Tree",
    "reap_scratch",
]

# What a copy holds: the packages a run imports, and what they read beside them.
COPIED = ("lab", "broker_ref", "clients", "faults", "scenarios", "spark_reports", "incidents")
PREFIX = "lab-zoo-"
STOP_GRACE_S = 30.0
CANARY_ENV = "LAB_ZOO_CANARY"  # the file zoo_canary writes to (zoo/canary.py)


class BugDoesNotApply(InputError):
    """A bug's replacement no longer matches today's code; the message says which."""


def _started(pid: int) -> str | None:
    """A process's start time (clock ticks since boot), None when it is gone or a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()
    if not fields or fields[0] == "Z":
        return None
    return fields[19] if len(fields) > 19 else None


@dataclass(frozen=True)
class Tree:
    """A copy of the lab's tree (`path`), with `bug` applied when one is given."""

    path: Path
    bug: Bug | None = None

    def lab(self, *args: str, canary_log: Path | None = None) -> tuple[list[str], dict[str, Any]]:
        """`python -m lab ARGS` as the copy runs it: the argv, and the keyword arguments
        (cwd, env) for subprocess. With `canary_log`, the bug's canaries (zoo/canary.py)
        append to that file, from the lab and every process it starts."""
        env = {k: v for k, v in os.environ.items() if k != CANARY_ENV}
        env["PYTHONPATH"] = str(self.path)
        if canary_log is not None:
            env[CANARY_ENV] = str(canary_log)
        return [sys.executable, "-m", "lab", *args], {"cwd": self.path, "env": env}

    def python(self, *args: str) -> tuple[list[str], dict[str, Any]]:
        """`python ARGS` with the copy's modules first (a check that imports them)."""
        env = {**os.environ, "PYTHONPATH": str(self.path)}
        return [sys.executable, *args], {"cwd": self.path, "env": env}


def copy_tree(dest: Path, source: Path = LAB_ROOT) -> None:
    """Copy the lab's packages (no caches) into `dest`, a new folder."""
    dest.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".mypy_cache", ".ruff_cache")
    for name in COPIED:
        shutil.copytree(source / name, dest / name, ignore=ignore)
    shutil.copy2(source / "pyproject.toml", dest / "pyproject.toml")


def apply_bug(tree: Path, bug: Bug, *, canaries: bool = True) -> list[Path]:
    """Apply every replacement of `bug` in `tree`, then its canaries (unless `canaries` is
    False) with the canary module they call; the files changed. BugDoesNotApply when an
    `old` text is not in its file exactly once (today's code no longer has it)."""
    changed: dict[Path, str] = {}
    steps = [("replacement", n, r) for n, r in enumerate(bug.replacements, start=1)]
    if canaries:
        steps += [("canary", n, r) for n, r in enumerate(bug.canaries, start=1)]
        shutil.copy2(CANARY_MODULE, tree / "zoo_canary.py")
    for what, number, rep in steps:
        path = tree / rep.file
        if path not in changed:
            if not path.is_file():
                raise BugDoesNotApply(
                    f"bug {bug.name} no longer applies: {rep.file} is not in the tree "
                    f"({what} {number}; update {bug.source.name})"
                )
            changed[path] = path.read_text(encoding="utf-8")
        found = changed[path].count(rep.old)
        if found != 1:
            how = "is not there" if found == 0 else f"is there {found} times"
            raise BugDoesNotApply(
                f"bug {bug.name} no longer applies: {what} {number}'s old text {how} "
                f"in {rep.file} (the code changed; update {bug.source.name})"
            )
        changed[path] = changed[path].replace(rep.old, rep.new)
    for path, text in changed.items():
        path.unlink()  # a new file, never a write through a link to the original
        path.write_text(text, encoding="utf-8")
    return sorted(changed)


class ScratchRoot:
    """A temporary folder for scratch trees and what their runs write, removed on exit and
    reaped by the next `lab` command when its owner was killed."""

    def __init__(self, parent: Path | None = None) -> None:
        base = Path(parent) if parent is not None else Path(tempfile.gettempdir())
        pid = os.getpid()
        prefix = f"{PREFIX}{pid}-{_started(pid)}-"
        self.path = Path(tempfile.mkdtemp(prefix=prefix, dir=base))

    def tree(self, name: str, bug: Bug | None = None) -> Tree:
        """A copy of the lab's tree in folder `name`, `bug` applied (none: as it is)."""
        dest = self.path / name
        copy_tree(dest)
        if bug is not None:
            apply_bug(dest, bug)
        return Tree(dest, bug)

    def close(self) -> None:
        """Stop what still runs from the root (a run a campaign killed on the way out had
        forked), then remove it."""
        _stop_all(self.path)
        shutil.rmtree(self.path, ignore_errors=True)

    def __enter__(self) -> ScratchRoot:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _owner_gone(folder: Path) -> bool:
    """Whether the process named in the folder's name (pid, start time) is gone."""
    parts = folder.name.removeprefix(PREFIX).split("-")
    if len(parts) < 3 or not parts[0].isdigit():
        return False  # not a name this module makes: left alone
    return _started(int(parts[0])) != parts[1]


def running_in(folder: Path) -> list[int]:
    """The processes whose working folder is inside `folder` (a scratch tree's lab, the runs
    it forked, their nodes and workers)."""
    inside = str(folder.resolve()) + os.sep
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            with contextlib.suppress(OSError):
                if (os.readlink(entry / "cwd") + os.sep).startswith(inside):
                    found.append(int(entry.name))
    return found


def _stop_all(folder: Path) -> None:
    """SIGTERM for what runs from `folder` (a run heals and stops), SIGKILL after a grace."""
    pids = running_in(folder)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE_S
    while pids and time.monotonic() < deadline:
        time.sleep(0.2)
        pids = [p for p in pids if _started(p) is not None]
    for pid in running_in(folder):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def reap_scratch(parent: Path | None = None) -> list[Path]:
    """Remove every scratch root whose owner is gone, after stopping what still runs from
    it; the folders removed."""
    base = Path(parent) if parent is not None else Path(tempfile.gettempdir())
    reaped: list[Path] = []
    for folder in sorted(base.glob(f"{PREFIX}*")):
        if folder.is_dir() and _owner_gone(folder):
            _stop_all(folder)
            with contextlib.suppress(OSError):
                shutil.rmtree(folder)
                reaped.append(folder)
    return reaped
