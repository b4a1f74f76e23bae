"""Names for configurations, as the seeds' performance table spells them.

durability  "SYNC,SYNC,ALL" or "NO_SYNC,NO_SYNC,ALL - coalescing-sync"
config      "No HA" for a single node, else the durability ("… (3 nodes)" beyond two)
clients     "producers/consumers", e.g. "8/8"
config_order  sorts configurations the way the seeds' table does
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

__all__ = ["with_labels"]

_SYNC_ORDER = {"SYNC": 0, "WRITE_NO_SYNC": 1, "NO_SYNC": 2}
_ACK_ORDER = {"ALL": 0, "SIMPLE_MAJORITY": 1, "NONE": 2}


def _rank(column: str, order: dict[str, int]) -> Column:
    ranked = F.lit(len(order))
    for name, rank in order.items():
        ranked = F.when(F.col(column) == name, F.lit(rank)).otherwise(ranked)
    return ranked


def with_labels(runs: DataFrame) -> DataFrame:
    """Add `durability`, `config`, `config_order` and `clients` to a runs frame."""
    triplet = F.concat_ws(",", "master_sync", "replica_sync", "ack_policy")
    durability = (
        F.when(F.col("master_sync").isNull(), F.lit(None).cast("string"))
        .when(F.col("coalescing_sync"), F.concat(triplet, F.lit(" - coalescing-sync")))
        .otherwise(triplet)
    )
    ha = F.when(F.col("nodes") == 2, durability).otherwise(
        F.concat(durability, F.lit(" ("), F.col("nodes").cast("string"), F.lit(" nodes)"))
    )
    order = (
        F.col("nodes") * 1000
        + F.col("coalescing_sync").cast("int") * 100
        + _rank("master_sync", _SYNC_ORDER) * 16
        + _rank("replica_sync", _SYNC_ORDER) * 4
        + _rank("ack_policy", _ACK_ORDER)
    )
    single = F.col("nodes") == 1
    return runs.withColumns(
        {
            "durability": durability,
            "config": F.when(single, F.lit("No HA")).otherwise(ha),
            "config_order": F.when(single, F.lit(0)).otherwise(order),
            "clients": F.when(
                F.col("producers").isNotNull(), F.concat_ws("/", "producers", "consumers")
            ),
        }
    )
