"""The history synthesizer writes section-2 histories, deterministically for a seed."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from lab.bench.history_synth import synthesize


def test_same_seed_same_bytes(tmp_path: Path) -> None:
    first, second, other = (tmp_path / name for name in ("a.jsonl", "b.jsonl", "c.jsonl"))
    options = {"operations": 2000, "lose": 3, "duplicate": 2, "unknown": 4, "fail": 1}
    assert synthesize(first, seed=5, **options) == synthesize(second, seed=5, **options)
    synthesize(other, seed=6, **options)
    assert first.read_bytes() == second.read_bytes()
    assert first.read_bytes() != other.read_bytes()


def test_lines_follow_the_history_format(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    truth = synthesize(path, operations=1000, consumers=3, seed=1, unknown=5, drain_ok=False)
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert len(records) == truth.operations == 1000
    assert [record["index"] for record in records] == list(range(1000))
    times = [record["time"] for record in records]
    assert all(later > earlier for earlier, later in itertools.pairwise(times))
    for record in records:
        assert record["type"] in {"invoke", "ok", "fail", "info"}
        assert record["f"] in {"send", "receive", "drain"}
        assert (record["value"] is None) == (record["f"] == "drain")
    drains = [(r["process"], r["type"]) for r in records[-6:]]
    assert [process for process, _ in drains] == ["c0", "c0", "c1", "c1", "c2", "c2"]
    assert [kind for _, kind in drains[::2]] == ["invoke"] * 3
    assert sorted(kind for _, kind in drains[1::2]) == ["info", "ok", "ok"]
    assert truth.valid is True


def test_faults_that_do_not_fit_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="need"):
        synthesize(tmp_path / "h.jsonl", operations=10, seed=1, lose=10)


@pytest.mark.parametrize("operations", [300_000, 300_001, 300_002])
def test_the_exact_number_of_operations_is_written(tmp_path: Path, operations: int) -> None:
    path = tmp_path / "history.jsonl"
    truth = synthesize(path, operations=operations, seed=2, lose=2)
    assert truth.operations == operations
    assert path.read_bytes().count(b"\n") == operations
