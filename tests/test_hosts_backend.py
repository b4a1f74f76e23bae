"""The hosts backend against a rig of namespaces, the way it drives a user's machines: a
scenario over SSH (shipped, started, judged, fetched, removed), and a lab killed with SIGKILL
whose nodes and folders on the hosts the next `lab` command removes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import run_lab
from hosts_helpers import on_host, rig_of

from lab.backends.ssh.hosts_file import Inventory
from lab.backends.ssh.session import SESSIONS
from lab.compose import parts_for
from lab.run.runner import run_scenario

pytestmark = [pytest.mark.hosts, pytest.mark.processes]

LEFT = "find /srv/lab -mindepth 1 | wc -l; ps -eo args | grep -c '[s]rv/lab/lab-' || true"


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Inventory]]:
    with rig_of(3, tmp_path_factory.mktemp("rig")) as (_, hosts_file, inventory):
        yield hosts_file, inventory


def _nothing_left(inventory: Inventory) -> None:
    for node in ("n1", "n2", "n3"):
        assert on_host(inventory, node, LEFT).split() == ["0", "0"], node


def test_a_scenario_runs_over_ssh_and_leaves_the_hosts_as_it_found_them(
    rig: tuple[Path, Inventory], tmp_path: Path
) -> None:
    hosts_file, inventory = rig
    parts = parts_for("master-failure", "ssh", "broker_ref", hosts_file=hosts_file)
    spec = parts.scenario.spec(7, backend="ssh", target=parts.target)
    outcome = run_scenario(spec, parts, tmp_path / "runs")
    assert outcome.verdict.held, outcome.summary
    assert outcome.check.acknowledged > 0 and outcome.check.lost.count == 0
    folder = outcome.folder.path
    events = [json.loads(line) for line in (folder / "events.jsonl").read_text().splitlines()]
    starts = {e["node"]: e["host"] for e in events if e["kind"] == "node.start"}
    assert starts == {"n1": "h1", "n2": "h2", "n3": "h3"}
    assert any(e["kind"] == "node.role" for e in events)  # the logs came back as they were written
    for node in ("n1", "n2", "n3"):  # each node's folder fetched from its host
        assert (folder / "nodes" / node / "stderr.log").is_file()
        assert (folder / "nodes" / node / "data").is_dir()
        assert "MST-1001" in (folder / "nodes" / node / "broker.log").read_text()
    assert f"--hosts {hosts_file}" in outcome.reproduce
    _nothing_left(inventory)
    assert not any(r.body.get("hosts_file") == str(hosts_file) for r in SESSIONS.records())


def test_the_next_lab_command_clears_the_hosts_of_a_lab_killed_with_sigkill(
    rig: tuple[Path, Inventory], tmp_path: Path
) -> None:
    hosts_file, inventory = rig
    command = [sys.executable, "-m", "lab", "run", "master-failure", "--seed", "7"]
    command += ["--backend", "ssh", "--hosts", str(hosts_file), "--runs-dir", "runs"]
    proc = subprocess.Popen(
        command, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 120
        events = tmp_path / "runs" / "master-failure"
        while time.monotonic() < deadline:  # until the load runs on the hosts
            found = list(events.glob("*/events.jsonl"))
            if found and '"phase":"load"' in found[0].read_text():
                break
            assert proc.poll() is None, "the run ended before its load began"
            time.sleep(0.2)
        else:
            pytest.fail("the run's load did not begin within 120 s")
        assert on_host(inventory, "n2", LEFT).split()[1] != "0"  # its node runs there
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    done = run_lab("list", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    _nothing_left(inventory)
    assert not any(r.body.get("hosts_file") == str(hosts_file) for r in SESSIONS.records())
    result = json.loads(next(events.glob("*/result.json")).read_text())
    assert result["verdict"] == "interrupted"
