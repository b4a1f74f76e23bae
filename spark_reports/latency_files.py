"""Per-run latency histograms straight from each run's history.parquet, inside the tasks.

A run's history is one file, so its message latencies need no shuffle: each task reads its
files with pyarrow, groups the operations by message id (Arrow's hash aggregation) and
counts the rounded latencies with numpy, then hands Spark one row per run and metric with
two arrays (latencies, counts), which Spark explodes. The result is, row for row,
`latency.latency_histogram(latency.message_latencies(history))`:

    message_latencies   per id: the first send ok, the first and last send invoke, the first
                        receive ok, and whether a single process sent it
    significant         Spark's rounding to three significant digits, reproduced exactly:
                        the exponent from log10 (an exponent one off, as two log10s may be
                        one ulp apart just at a power of ten, rounds to the same value
                        there), then half-up rounding, exact for the doubles in question

This module is imported by the Python workers of the executors: it needs only numpy and
pyarrow (and the run folders on a path every executor sees).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

__all__ = [
    "HISTOGRAM_ARRAYS",
    "group_histograms",
    "run_histograms",
    "run_id_of_path",
    "significant",
    "summed_histograms",
]

HISTOGRAM_ARRAYS = "run_id string, metric string, latency_ms array<double>, count array<bigint>"
_COLUMNS = ["time", "process", "type", "f", "value"]
_NS_PER_MS = 1_000_000.0

Histogram = tuple[str, str, list[float], list[int]]


def group_histograms(groups: Iterable[tuple[str, Sequence[str]]]) -> Iterator[Histogram]:
    """`summed_histograms` of every (run_id, history.parquet files) in `groups`."""
    for run_id, paths in groups:
        yield from summed_histograms(run_id, paths)


def run_id_of_path(path: str) -> str:
    """`<scenario>/<folder>` of `…/<scenario>/<folder>/history.parquet`."""
    return "/".join(path.rstrip("/").split("/")[-3:-1])


def run_histograms(path: str) -> list[Histogram]:
    """(run_id, metric, latencies, counts) of one history.parquet, metric by metric."""
    return summed_histograms(run_id_of_path(path), [path])


def summed_histograms(run_id: str, paths: Sequence[str]) -> list[Histogram]:
    """The histograms of several runs' history.parquet files summed, under `run_id`."""
    rounded: dict[str, list[np.ndarray]] = {"ack": [], "receive": []}
    unmatched = 0
    for path in paths:
        ack_ms, receive_ms, unmatched_here = _latencies(pq.read_table(path, columns=_COLUMNS))
        rounded["ack"].append(significant(ack_ms))
        rounded["receive"].append(significant(receive_ms))
        unmatched += unmatched_here
    found: list[Histogram] = []
    for metric, parts in rounded.items():
        values = np.concatenate(parts)
        if values.size:
            latencies, counts = np.unique(values, return_counts=True)
            found.append((run_id, metric, latencies.tolist(), counts.tolist()))
    if unmatched:
        found.append((run_id, "ack_unmatched", [0.0], [unmatched]))
    return found


def _latencies(history: pa.Table) -> tuple[np.ndarray, np.ndarray, int]:
    """Per message id: send→ack and send→receive in ms (where defined), and how many ids
    have an acknowledgement that cannot be matched to their send."""
    function, kind, time = history.column("f"), history.column("type"), history.column("time")
    send, receive = pc.equal(function, "send"), pc.equal(function, "receive")
    ok, invoke = pc.equal(kind, "ok"), pc.equal(kind, "invoke")
    no_time = pa.scalar(None, pa.int64())
    grouped = (
        pa.table(
            {
                "value": history.column("value"),
                "ok": pc.if_else(pc.and_(send, ok), time, no_time),
                "invoke": pc.if_else(pc.and_(send, invoke), time, no_time),
                "receive": pc.if_else(pc.and_(receive, ok), time, no_time),
                "sender": pc.if_else(send, history.column("process"), pa.scalar(None, pa.string())),
            }
        )
        .filter(pc.or_(send, receive))
        .group_by("value", use_threads=False)
        .aggregate(
            [
                ("ok", "min"),
                ("invoke", "min"),
                ("invoke", "max"),
                ("receive", "min"),
                ("sender", "count_distinct"),
            ]
        )
    )
    ok_ns, has_ok = _times(grouped.column("ok_min"))
    first_ns, has_first = _times(grouped.column("invoke_min"))
    last_ns, has_last = _times(grouped.column("invoke_max"))
    receive_ns, has_receive = _times(grouped.column("receive_min"))
    one_sender = np.asarray(grouped.column("sender_count_distinct")) == 1
    matched = has_ok & one_sender & has_last & (last_ns <= ok_ns)
    ack_ms = (ok_ns[matched] - last_ns[matched]).astype(np.float64) / _NS_PER_MS
    timed = has_receive & has_first
    receive_ms = (receive_ns[timed] - first_ns[timed]).astype(np.float64) / _NS_PER_MS
    unmatched = int(np.count_nonzero(has_ok & ~matched))
    return ack_ms, receive_ms, unmatched


def _times(column: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """An int64 column as numbers (0 where null) and where it has a value."""
    valid = np.asarray(pc.is_valid(column))
    return np.asarray(pc.fill_null(column, 0), dtype=np.int64), valid


def significant(values: np.ndarray, digits: int = 3) -> np.ndarray:
    """`latency.significant` for an array: positive values rounded (half up) to `digits`
    significant digits; zero and negative values unchanged."""
    rounded = values.astype(np.float64, copy=True)
    positive = rounded > 0
    chosen = rounded[positive]
    exponent = np.floor(np.log10(chosen)) - (digits - 1)
    scale = np.power(10.0, np.abs(exponent))
    down = exponent < 0
    scaled = np.where(down, chosen * scale, chosen / scale)
    whole = np.floor(scaled)
    whole += (scaled - whole) >= 0.5
    rounded[positive] = np.where(down, whole / scale, whole * scale)
    return rounded
