"""Spark's log configuration is one file named by its content, not one per report process."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from spark_reports import session


def test_every_process_shares_one_complete_log_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    first = session._log_config_file()
    monkeypatch.setattr(session.os, "getpid", lambda: 4242)  # another report process
    second = session._log_config_file()
    assert first == second
    assert first.read_text(encoding="utf-8") == session._LOG_CONFIG
    assert [p.name for p in tmp_path.iterdir()] == [first.name]  # no partial file left
