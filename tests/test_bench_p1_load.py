"""The throughput table's load (`clients.bench_load`, `lab.bench.load.measure_cell`) against a
real node and group, and the table's arithmetic (`lab.bench.p1_table`) on made-up cells."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.backends.catalog import make_cluster
from lab.backends.process.cluster import ProcessCluster
from lab.bench.load import Cell, measure_cell
from lab.bench.p1_table import Trials, range_lines, saturated, saturation_lines, share_lines
from lab.ground.spec import Durability, Topology
from lab.targets.broker_ref import BrokerRefTarget


def _cell(rate: float, node: float = 0.5, load: float = 0.5, proxy: float = 0.1) -> Cell:
    return Cell(rate=rate, load_cores=load, cores={"n1": node, "n2": 0.2, "toxiproxy": proxy})


def test_saturated_names_the_side_at_its_limit() -> None:
    assert saturated(_cell(1, node=0.95), cores=2) == "broker"
    assert saturated(_cell(1, load=0.97), cores=2) == "clients"
    assert saturated(_cell(1, node=0.95, load=0.92), cores=2) == "broker+clients"
    assert saturated(_cell(1, node=0.8, load=0.8, proxy=0.3), cores=2) == "machine"
    assert saturated(_cell(1, node=0.3, load=0.2), cores=2) == "-"


def test_shares_spreads_and_the_seeds_ranges() -> None:
    single = {1: Trials((_cell(1000), _cell(900), _cell(1100))), 2: Trials((_cell(2000),) * 3)}
    sync = {1: Trials((_cell(200), _cell(300), _cell(250))), 2: Trials((_cell(1900),) * 3)}
    rows = {"single node": single, "SYNC,SYNC,ALL": sync}
    assert sync[1].share(single[1]) == pytest.approx((25.0, 20.0, 30.0))
    assert single[1].spread_pct == pytest.approx(20.0)
    lines = share_lines(rows, "single node", (1, 2))
    assert "1,000/s ± 10%" in lines[1] and "25.0% ( 20–30 )" in lines[2]
    checks, tally = range_lines(rows, "single node", (1, 2))
    assert tally == {"SYNC,SYNC,ALL": (1, 2)}  # 75 % drop within 62–95, 5 % outside
    assert "1/1 75% within" in checks[0] and "2/2 5% OUTSIDE" in checks[0]
    saturation = saturation_lines(rows, (1, 2), cores=2)
    assert saturation[1].count("- (node 0.50, load 0.50)") == 2


@pytest.fixture
def single_node(tmp_path: Path) -> Iterator[ProcessCluster]:
    cluster = make_cluster("process", BrokerRefTarget(), Topology(1), Durability(), tmp_path)
    assert isinstance(cluster, ProcessCluster)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.mark.processes
def test_the_load_is_counted_with_each_sides_cpu(
    single_node: ProcessCluster, tmp_path: Path
) -> None:
    cell = measure_cell(
        single_node.client_urls(),
        single_node.pids(),
        3,
        "p1-load",
        tmp_path,
        warmup_s=0.5,
        measure_s=1.0,
    )
    assert cell.rate > 0
    assert 0 < cell.load_cores <= 1.2
    assert set(cell.cores) == {"n1", "toxiproxy"} and cell.cores["n1"] > 0
    assert saturated(cell) in {"broker", "clients", "broker+clients", "machine", "-"}
    leftover = subprocess.run(
        ["pgrep", "-f", "clients.bench_load --urls " + single_node.client_urls()[0]],
        capture_output=True,
        text=True,
        check=False,
    )
    assert leftover.stdout == "", "the load process outlived its measurement"


def test_bad_load_arguments_exit_2() -> None:
    done = subprocess.run(
        [
            *(sys.executable, "-m", "clients.bench_load", "--urls", "", "--queue", "q"),
            *("--producers", "1", "--consumers", "1"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2 and "--urls names no URL" in done.stderr
