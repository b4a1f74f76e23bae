"""Explicit schemas for everything the jobs read: nothing is ever inferred.

HISTORY and EVENTS follow docs/run-folder.md; RUNS is one flat row per run folder,
built from spec.json and result.json (`run_folders.RunRecord`); `problem` is null for a run
that could be read and says why for one that could not.
"""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DataType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

__all__ = ["EVENTS", "HISTORY", "RUNS"]


def _fields(*pairs: tuple[str, DataType]) -> StructType:
    return StructType([StructField(name, kind, True) for name, kind in pairs])


HISTORY = _fields(
    ("index", LongType()),
    ("time", LongType()),
    ("process", StringType()),
    ("type", StringType()),
    ("f", StringType()),
    ("value", StringType()),
    ("node", StringType()),
    ("seq", LongType()),
    ("redelivered", BooleanType()),
    ("error", StringType()),
)

EVENTS = _fields(
    ("v", IntegerType()),
    ("time", LongType()),
    ("kind", StringType()),
    ("node", StringType()),
    ("role", StringType()),
    ("code", StringType()),
    ("text", StringType()),
    ("phase", StringType()),
)

RUNS = _fields(
    ("run_id", StringType()),
    ("folder", StringType()),
    ("scenario", StringType()),
    ("date", StringType()),
    ("stamp", StringType()),
    ("problem", StringType()),
    ("seed", LongType()),
    ("target", StringType()),
    ("backend", StringType()),
    ("nodes", IntegerType()),
    ("master_sync", StringType()),
    ("replica_sync", StringType()),
    ("ack_policy", StringType()),
    ("coalescing_sync", BooleanType()),
    ("producers", IntegerType()),
    ("consumers", IntegerType()),
    ("size", IntegerType()),
    ("git_revision", StringType()),
    ("lab_version", StringType()),
    ("verdict", StringType()),
    ("reasons", ArrayType(StringType())),
    ("reproduce", StringType()),
    ("acknowledged", LongType()),
    ("received", LongType()),
    ("lost", LongType()),
    ("duplicated", LongType()),
    ("duplicate_deliveries", LongType()),
    ("resurrected", LongType()),
    ("unexpected", LongType()),
    ("operations", LongType()),
    ("workload_s", DoubleType()),
    ("acknowledged_per_s", DoubleType()),
    ("unavailable_total_s", DoubleType()),
    ("unavailable_longest_s", DoubleType()),
    ("failover_s", ArrayType(DoubleType())),
    ("two_masters_seen", BooleanType()),
)
