"""actionlint, the linter of the lab's GitHub Actions workflows (the nightly campaign).

It is built on first use with `go install github.com/rhysd/actionlint/cmd/actionlint@VERSION`
into `<tools dir>/bin/actionlint` (GOBIN pointed at a staging folder, the binary moved
into place, under a lock), so two test workers never build it twice and an interrupted
build leaves nothing half-done; later calls only ask the binary its version.

    actionlint_binary(tools_dir, say)   the pinned actionlint, built if missing
    lint(binary, files)                 its findings, one Finding each
    shellcheck_used()                   whether actionlint also runs shellcheck on `run:`
                                        scripts (it does when shellcheck is on PATH)
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from lab.ground.errors import LabError, SetupError

__all__ = [
    "ACTIONLINT_VERSION",
    "Finding",
    "actionlint_binary",
    "installed_version",
    "lint",
    "shellcheck_used",
]

ACTIONLINT_VERSION = "v1.7.12"
_MODULE = "github.com/rhysd/actionlint/cmd/actionlint"
_INSTALL_TIMEOUT_S = 900.0
_LINT_TIMEOUT_S = 120.0

Say = Callable[[str], None]


@dataclass(frozen=True)
class Finding:
    """One problem actionlint reports: where, which rule (`kind`), what."""

    file: str
    line: int
    column: int
    kind: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}: {self.message} [{self.kind}]"


def installed_version(binary: Path) -> str | None:
    """The version the binary says it is (first line of `-version`), if it runs."""
    if not binary.is_file():
        return None
    try:
        done = subprocess.run(
            [str(binary), "-version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        return None
    version = lines[0].strip()
    return version if version.startswith("v") else f"v{version}"


def _go() -> str:
    found = shutil.which("go")
    if found is None:
        raise SetupError(
            f"actionlint {ACTIONLINT_VERSION} is built with `go install`, and Go is not on "
            "PATH: install Go 1.25 or newer"
        )
    return found


def _tail(text: str, lines: int = 3) -> str:
    kept = [line for line in text.strip().splitlines() if line.strip()][-lines:]
    return " | ".join(kept) or "no output"


def _install(binary: Path, say: Say) -> None:
    go = _go()
    staging = binary.parent / f".installing-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    say(f"lab: building actionlint {ACTIONLINT_VERSION} with go install into {binary.parent}")
    try:
        done = subprocess.run(
            [go, "install", f"{_MODULE}@{ACTIONLINT_VERSION}"],
            env={**os.environ, "GOBIN": str(staging)},
            capture_output=True,
            text=True,
            timeout=_INSTALL_TIMEOUT_S,
            check=False,
        )
        built = staging / "actionlint"
        if done.returncode != 0 or not built.is_file():
            raise SetupError(
                f"go install {_MODULE}@{ACTIONLINT_VERSION} failed (exit {done.returncode}): "
                f"{_tail(done.stderr or done.stdout)}"
            )
        os.replace(built, binary)
    except subprocess.TimeoutExpired as exc:
        raise SetupError(
            f"go install did not build actionlint within {_INSTALL_TIMEOUT_S:.0f} s"
        ) from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    if installed_version(binary) != ACTIONLINT_VERSION:
        raise SetupError(f"{binary} does not say it is actionlint {ACTIONLINT_VERSION}")


def actionlint_binary(tools_dir: Path, say: Say) -> Path:
    """The pinned actionlint under `tools_dir/bin`, built if it is missing or another version."""
    binary = (tools_dir / "bin" / "actionlint").absolute()
    if installed_version(binary) != ACTIONLINT_VERSION:
        binary.parent.mkdir(parents=True, exist_ok=True)
        with (tools_dir / "actionlint.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # another test worker may be building it
            if installed_version(binary) != ACTIONLINT_VERSION:
                _install(binary, say)
    return binary


def shellcheck_used() -> bool:
    """actionlint checks `run:` scripts with shellcheck when it finds one on PATH."""
    return shutil.which("shellcheck") is not None


def lint(binary: Path, files: Sequence[Path], *, cwd: Path | None = None) -> list[Finding]:
    """actionlint's findings on `files` (none: the workflows pass)."""
    if not files:
        raise LabError("no workflow files to lint")
    try:
        done = subprocess.run(
            [str(binary), "-no-color", "-format", "{{json .}}", *map(str, files)],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=_LINT_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise LabError(f"actionlint did not finish within {_LINT_TIMEOUT_S:.0f} s") from exc
    if done.returncode not in (0, 1):  # 2: bad command line, 3: it failed
        raise LabError(f"actionlint failed (exit {done.returncode}): {_tail(done.stderr)}")
    try:
        raw = json.loads(done.stdout or "[]")
    except json.JSONDecodeError as exc:
        raise LabError(f"actionlint's output is not JSON: {exc}: {done.stdout[:300]}") from None
    return [
        Finding(
            file=str(item.get("filepath", "")),
            line=int(item.get("line", 0)),
            column=int(item.get("column", 0)),
            kind=str(item.get("kind", "")),
            message=str(item.get("message", "")),
        )
        for item in raw or []
    ]
