"""Load: each report table as CSV and Parquet in the output folder, collected through Arrow.

Report tables are small (a row per group, per run or per period); they are collected once
and written with pyarrow, one `<name>.csv` and one `<name>.parquet` each. List columns are
joined with "; " in the CSV.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
from pyspark.sql import DataFrame

__all__ = ["collect_table", "write_table"]


def collect_table(frame: DataFrame) -> pa.Table:
    """The frame's rows as an Arrow table (types from the frame's schema)."""
    return frame.toArrow()


def _csv_ready(table: pa.Table) -> pa.Table:
    columns = []
    for column in table.columns:
        if pa.types.is_list(column.type) or pa.types.is_large_list(column.type):
            texts = [
                None if value is None else "; ".join(str(v) for v in value)
                for value in column.to_pylist()
            ]
            columns.append(pa.array(texts, pa.string()))
        else:
            columns.append(column)
    return pa.table(columns, names=table.column_names)


def write_table(table: pa.Table, out: Path, name: str) -> tuple[Path, Path]:
    """Write `<out>/<name>.csv` and `<out>/<name>.parquet`; return both paths."""
    csv_path, parquet_path = out / f"{name}.csv", out / f"{name}.parquet"
    pa_csv.write_csv(_csv_ready(table), csv_path)
    pq.write_table(table, parquet_path)
    return csv_path, parquet_path
