"""Where the lab's own checkout is (build contexts, caches, the git revision of a run), and
the user's cache for what is built per machine rather than per checkout."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["LAB_ROOT", "user_cache"]

LAB_ROOT = Path(__file__).resolve().parents[2]


def user_cache() -> Path:
    """`$XDG_CACHE_HOME/lab` (`~/.cache/lab`): what is built once per user (wheels)."""
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "lab"
