"""broker_ref's log under torn and corrupt writes: the log cut at every byte offset of its
last records, bits flipped in its tail and in its middle, garbage after it. Recovery keeps
every complete record before the damage, drops only a torn tail (and says how much), never
crashes; damage with valid records after it stops the node, naming the file and offset."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker_ref.errors import StoreCorrupt
from broker_ref.log_store import LOG_FILE_NAME, MAGIC, LogStore
from broker_ref.records import Declare, Dequeue, Enqueue
from lab.ground.ports import free_ports

ROOT = Path(__file__).resolve().parent.parent
RECORDS = [
    Declare(1, "q"),
    *(Enqueue(1 + i, "q", i, f"message {i}".encode() * (1 + i % 4)) for i in range(1, 9)),
    Dequeue(10, "q", 1),
    Enqueue(11, "q", 9, b"last"),
]


def _written(directory: Path) -> tuple[bytes, list[int]]:
    """A synced log of RECORDS, and the offset just after each record."""
    store, _ = LogStore.open(directory)
    for record in RECORDS:
        store.append(record)
    store.sync()
    store.close()
    reopened, recovery = LogStore.open(directory)
    reopened.close()
    return (directory / LOG_FILE_NAME).read_bytes(), recovery.ends()


def _reopen(directory: Path, data: bytes) -> tuple[list[object], object]:
    (directory / LOG_FILE_NAME).write_bytes(data)
    store, recovery = LogStore.open(directory)
    store.close()
    return list(recovery.records), recovery.torn_tail


def test_cut_at_every_offset_of_the_last_records(tmp_path: Path) -> None:
    data, ends = _written(tmp_path / "original")
    first_cut = ends[-4]  # every byte of the last three records, and the end itself
    for cut in range(first_cut, len(data) + 1):
        directory = tmp_path / f"cut-{cut}"
        directory.mkdir()
        records, torn = _reopen(directory, data[:cut])
        kept = sum(1 for end in ends if end <= cut)
        assert records == RECORDS[:kept], f"cut at {cut}"
        if cut in ends:
            assert torn is None
        else:
            assert torn is not None and torn.dropped_bytes == cut - ends[kept - 1]  # type: ignore[attr-defined]
        # what recovery cut is gone from the file: the next open finds a clean log
        assert (directory / LOG_FILE_NAME).stat().st_size == ends[kept - 1]


def test_a_flipped_bit_in_the_last_record_drops_only_it(tmp_path: Path) -> None:
    data, ends = _written(tmp_path / "original")
    start = ends[-2]
    for offset in range(start, len(data)):
        for bit in (0, 5):
            damaged = bytearray(data)
            damaged[offset] ^= 1 << bit
            directory = tmp_path / f"flip-{offset}-{bit}"
            directory.mkdir()
            records, torn = _reopen(directory, bytes(damaged))
            assert records == RECORDS[:-1], f"flip at {offset}"
            assert torn is not None


def test_a_flipped_bit_in_the_middle_stops_recovery_naming_file_and_offset(
    tmp_path: Path,
) -> None:
    data, ends = _written(tmp_path / "original")
    for index in range(0, len(ends) - 1):  # every record but the last
        record_start = ends[index - 1] if index else len(MAGIC)
        for offset in (record_start, record_start + 4, record_start + 9, ends[index] - 1):
            damaged = bytearray(data)
            damaged[offset] ^= 0x10
            directory = tmp_path / f"mid-{offset}"
            directory.mkdir(exist_ok=True)
            (directory / LOG_FILE_NAME).write_bytes(bytes(damaged))
            with pytest.raises(StoreCorrupt) as raised:
                LogStore.open(directory)
            assert raised.value.offset == record_start
            assert raised.value.resumes_at > record_start
            assert str(directory / LOG_FILE_NAME) in str(raised.value)
            # nothing was cut: the damaged log is left as it was, for a person to look at
            assert (directory / LOG_FILE_NAME).read_bytes() == bytes(damaged)


def test_zeros_after_the_log_are_a_torn_tail(tmp_path: Path) -> None:
    data, _ = _written(tmp_path / "original")
    directory = tmp_path / "zeros"
    directory.mkdir()
    records, torn = _reopen(directory, data + bytes(4096))
    assert records == RECORDS and torn is not None


@settings(max_examples=150, deadline=None)
@given(garbage=st.binary(min_size=1, max_size=600))
def test_garbage_after_the_log_never_costs_a_record(garbage: bytes) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        data, _ = _written(Path(tmp) / "original")
        directory = Path(tmp) / "garbage"
        directory.mkdir()
        records, torn = _reopen(directory, data + garbage)
        assert records == RECORDS
        assert torn is not None or not garbage


def test_a_node_on_a_damaged_log_stops_and_says_where(tmp_path: Path) -> None:
    data, ends = _written(tmp_path / "data")
    damaged = bytearray(data)
    damaged[ends[2] + 10] ^= 0xFF  # inside the fourth record
    (tmp_path / "data" / LOG_FILE_NAME).write_bytes(bytes(damaged))
    amqp, management = free_ports(2)
    config = tmp_path / "node.json"
    node = {"name": "n1", "group": "g", "host": "127.0.0.1", "amqp_port": amqp}
    node |= {"management_port": management, "data_dir": str(tmp_path / "data")}
    config.write_text(json.dumps(node), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "broker_ref", "--config", str(config)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    line = next(x for x in done.stdout.splitlines() if "REF-1008" in x)
    assert f"Store corrupt : {tmp_path / 'data' / LOG_FILE_NAME} : offset {ends[2]}" in line
    assert f"corrupt record at offset {ends[2]}" in done.stderr
