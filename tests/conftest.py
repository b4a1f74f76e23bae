from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from broker_helpers import NodeFactory, NodeProcess, _free_port
from group_helpers import LocalGroup
from hypothesis import settings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

ROOT = Path(__file__).resolve().parent.parent

# Hypothesis's per-example deadline is a wall-clock assertion: on a busy machine (the
# suite beside itself on two cores) an example may take longer without anything wrong.
settings.register_profile("lab", deadline=None)
settings.load_profile("lab")


def run_lab(
    *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run the `lab` command as a user would, in a directory of the test's own. Every
    warning is shown (`PYTHONWARNINGS=default`, as a user who sets it sees them), so a test of
    what `lab` prints also proves that no third-party warning reaches its stderr."""
    return subprocess.run(
        [sys.executable, "-m", "lab", *args],
        cwd=cwd,
        env={**os.environ, "PYTHONWARNINGS": "default", **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.fixture
def lab() -> object:
    return run_lab


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """One local Spark session for every `spark` test (imported here only when one asks).
    In an environment without the report JVM's class archive, this session records it, as
    a first report does, and puts it in place at the end."""
    from spark_reports.session import finish_driver, start_driver

    driver = start_driver("local[2]", app_name="lab-report-tests")
    yield driver.spark
    finish_driver(driver, lambda text: print(text, file=sys.stderr))


@pytest.fixture
def start_node(tmp_path: Path) -> Iterator[NodeFactory]:
    """Starts nodes on free ports in tmp_path; every one is killed when the test ends."""
    nodes: list[NodeProcess] = []

    def start(**overrides: Any) -> NodeProcess:
        folder = tmp_path / f"node{len(nodes) + 1}"
        folder.mkdir()
        for _attempt in range(3):
            config = {
                "name": "n1",
                "group": "lab",
                "amqp_port": _free_port(),
                "management_port": _free_port(),
                "data_dir": str(folder / "data"),
                "idle_timeout_s": 2.0,
            } | overrides
            node = NodeProcess(folder, config)
            nodes.append(node)
            node.start()
            try:
                node.wait_ready()
                return node
            except AssertionError:
                if "in use" not in node.stderr():
                    raise
        raise AssertionError("no free ports after 3 attempts")

    yield start
    for node in nodes:
        node.kill()


@pytest.fixture
def make_group(tmp_path: Path) -> Iterator[Callable[..., LocalGroup]]:
    groups: list[LocalGroup] = []

    def make(size: int, start: bool = True, **settings: Any) -> LocalGroup:
        group = LocalGroup(tmp_path / f"g{len(groups)}", size, **settings)
        groups.append(group)
        if start:
            for name in group.configs:
                group.start(name)
        return group

    yield make
    for group in groups:
        group.stop_all()
