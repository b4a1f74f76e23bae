"""Defaults shared by the report jobs and the command line (importing this starts no JVM)."""

from __future__ import annotations

__all__ = ["DEFAULT_MASTER"]

DEFAULT_MASTER = "local[*]"
