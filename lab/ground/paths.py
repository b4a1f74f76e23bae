"""Where the lab's own checkout is (build contexts, caches, the git revision of a run)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["LAB_ROOT"]

LAB_ROOT = Path(__file__).resolve().parents[2]
