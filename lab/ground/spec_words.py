"""How the command line and the lab's files write a run's words: seeds, `NAME@VERSION`
targets, a target's `KEY=VALUE` settings; and the lab checkout's git revision a spec records."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from lab.ground.errors import UsageError

__all__ = [
    "MAX_SEED",
    "git_revision",
    "parse_seed",
    "parse_target_settings",
    "split_target",
    "version_or_none",
]

MAX_SEED = 2**63 - 1


def parse_target_settings(pairs: list[str] | None) -> dict[str, str]:
    """`KEY=VALUE` words (`--target-setting`, repeatable) as a mapping; a UsageError for a
    word without `=` (the target checks the keys and values themselves)."""
    found: dict[str, str] = {}
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UsageError(
                f"--target-setting {pair!r}: write KEY=VALUE, e.g. activation=quorum-voting"
            )
        found[key.strip()] = value.strip()
    return found


_VERSION = re.compile(r"^[0-9A-Za-z][0-9A-Za-z._+-]*$")


def version_or_none(raw: object) -> str | None:
    if raw is None:
        return None
    if not isinstance(raw, str) or not _VERSION.match(raw):
        raise ValueError(f"target_version: {raw!r} is not a version (e.g. 9.1.0)")
    return raw


def split_target(ref: str) -> tuple[str, str | None]:
    """`NAME@VERSION` (or `NAME`) as (name, version); a UsageError for a bad version."""
    name, at, version = ref.partition("@")
    if not at:
        return ref, None
    if not name or not _VERSION.match(version):
        raise UsageError(
            f"target {ref!r}: write NAME@VERSION, e.g. qpid-broker-j@9.1.0 "
            "(a version is letters, digits, dots and dashes)"
        )
    return name, version


def parse_seed(text: str) -> int:
    """A seed is a non-negative integer below 2**63."""
    try:
        seed = int(text, 10)
    except ValueError:
        raise UsageError(f"bad seed {text!r}: must be a non-negative integer") from None
    if not 0 <= seed <= MAX_SEED:
        raise UsageError(f"bad seed {text!r}: must be between 0 and {MAX_SEED}")
    return seed


def git_revision(root: Path) -> str | None:
    """The lab checkout's git revision, or None outside a git checkout."""
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None
