"""The checker on synthesized histories: it finds exactly the faults injected into them."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.bench.history_synth import SynthTruth, synthesize
from lab.judge.checker import CheckResult, IdSet, check_path, check_table, read_history


def assert_matches_truth(result: CheckResult, truth: SynthTruth) -> None:
    def capped(values: tuple[str, ...]) -> IdSet:
        return IdSet(count=len(values), ids=values[:1000])

    assert result == CheckResult(
        valid=truth.valid,
        attempted=truth.attempted,
        acknowledged=truth.acknowledged,
        failed=len(truth.failed),
        indeterminate=len(truth.indeterminate),
        received=truth.received,
        lost=capped(truth.lost),
        unexpected=capped(truth.unexpected),
        resurrected=capped(truth.resurrected),
        recovered=capped(truth.recovered),
        duplicated=capped(truth.duplicated),
        duplicate_deliveries=truth.duplicate_deliveries,
    )


faults = st.integers(min_value=0, max_value=12)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(min_value=0, max_value=2**32),
    operations=st.integers(min_value=250, max_value=3000),
    producers=st.integers(min_value=1, max_value=5),
    consumers=st.integers(min_value=1, max_value=3),
    lose=faults,
    duplicate=faults,
    resurrect=faults,
    unknown=faults,
    fail=faults,
    unexpected=faults,
    drain_ok=st.booleans(),
)
def test_checker_finds_exactly_the_injected_faults(
    tmp_path_factory: pytest.TempPathFactory,
    seed: int,
    operations: int,
    producers: int,
    consumers: int,
    lose: int,
    duplicate: int,
    resurrect: int,
    unknown: int,
    fail: int,
    unexpected: int,
    drain_ok: bool,
) -> None:
    path = tmp_path_factory.mktemp("synth") / "history.jsonl"
    truth = synthesize(
        path,
        operations=operations,
        producers=producers,
        consumers=consumers,
        seed=seed,
        lose=lose,
        duplicate=duplicate,
        resurrect=resurrect,
        unknown=unknown,
        fail=fail,
        unexpected=unexpected,
        drain_ok=drain_ok,
    )
    assert (len(truth.lost), len(truth.duplicated), len(truth.resurrected)) == (
        lose,
        duplicate,
        resurrect,
    )
    assert (len(truth.indeterminate), len(truth.unexpected)) == (unknown, unexpected)
    assert len(truth.failed) == fail + resurrect
    table = read_history(path)
    assert table.num_rows == truth.operations
    assert operations - 2 <= truth.operations <= operations
    assert_matches_truth(check_table(table), truth)


def test_big_synthesized_history_caps_ids(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    truth = synthesize(path, operations=20_000, seed=3, lose=1200, drain_ok=False)
    result = check_path(path)
    assert result.valid == "unknown"
    assert result.lost.count == 1200
    assert_matches_truth(result, truth)
