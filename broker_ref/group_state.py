"""What a node must remember across restarts to vote safely: its term and its vote in it."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from broker_ref.errors import StoreError

__all__ = ["TermRecord", "load_term", "save_term"]

FILE_NAME = "group.json"


@dataclass(frozen=True)
class TermRecord:
    term: int = 0
    voted_for: str | None = None


def load_term(data_dir: Path) -> TermRecord:
    path = data_dir / FILE_NAME
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        return TermRecord(int(raw["term"]), raw.get("voted_for"))
    except FileNotFoundError:
        return TermRecord()
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise StoreError(f"cannot read {path}: {exc}") from exc


def save_term(data_dir: Path, record: TermRecord) -> None:
    """Write the term durably (temp file, fsync, rename) before acting on it."""
    path = data_dir / FILE_NAME
    tmp = path.with_name(FILE_NAME + ".tmp")
    data = json.dumps({"term": record.term, "voted_for": record.voted_for}).encode()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
