"""A replicated group's master exists only with a quorum: a prediction that forbids two
masters beyond the lease (`two_masters="beyond-lease"`) lets a master cut off keep its role
for the run's silence and election timeouts and some work, and no longer."""

from __future__ import annotations

from dataclasses import replace

import pytest
from test_predictions import _check, _event, _metrics

from lab.judge.metrics import masters_overlap_s
from lab.judge.prediction import Prediction


def test_two_masters_beyond_the_lease_break_the_prediction_briefly_two_do_not() -> None:
    events = [
        _event(1.0, "node.role", "n1", role="MASTER"),
        _event(4.0, "node.role", "n2", role="MASTER"),  # n1 cut off, still says master
        _event(4.4, "node.role", "n1", role="WAITING"),
        _event(8.0, "node.role", "n3", role="MASTER"),
        _event(13.5, "node.role", "n2", role="WAITING"),
    ]
    assert masters_overlap_s(events) == pytest.approx(5.5)
    assert masters_overlap_s(events[:3]) == pytest.approx(0.4)
    prediction = Prediction("p", two_masters="beyond-lease")
    brief = replace(_metrics(two_masters=True), two_masters_longest_s=0.4)
    assert prediction.judge(_check(), [], brief).outcome == "held"
    long = replace(_metrics(two_masters=True), two_masters_longest_s=5.5)
    verdict = prediction.judge(_check(), [], long)
    assert verdict.outcome == "broken" and verdict.violations == ("two-masters",)
    assert "for 5.5 s, longer than a master keeps its role without a quorum (3.8 s" in str(
        verdict.reasons
    )
