"""Judging a run, in one place: the queue checker, the run's metrics, the facts a
prediction reads, the expectations and predictions themselves, and the `RunResult`
written to result.json. Scenarios declare their predictions with these values."""
