"""Files written whole or not at all."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

__all__ = ["write_json", "write_text"]


def write_json(path: Path, obj: Any) -> None:
    """Write a JSON file whole or not at all (a temporary file, then a rename)."""
    write_text(path, json.dumps(obj, indent=2) + "\n")


def write_text(path: Path, text: str) -> None:
    """Write a text file whole or not at all (a temporary file, then a rename)."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")  # writers never share one
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
