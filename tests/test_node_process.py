"""A node process that ends by itself is reported (`node.exit`); one the lab ends is not."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest

from lab.backends.process.node import NodeProcess
from lab.ground.nodes import NodePlan
from lab.targets.broker_ref import BrokerRefTarget


class _Events:
    def __init__(self) -> None:
        self.kinds: list[tuple[str, dict[str, object]]] = []

    def emit(self, kind: str, node: str | None = None, **fields: Any) -> None:
        self.kinds.append((kind, fields))


def _node(tmp_path: Path, code: str) -> tuple[NodeProcess, _Events]:
    plan = NodePlan("n1", 1, 2, 3, tmp_path / "data", tmp_path)
    events = _Events()
    command = [sys.executable, "-c", code]
    return NodeProcess(plan, command, BrokerRefTarget(), events, detached=False), events


def _wait_for(events: _Events, kind: str) -> dict[str, object] | None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        found = [fields for k, fields in events.kinds if k == kind]
        if found:
            return found[0]
        time.sleep(0.05)
    return None


@pytest.mark.processes
def test_a_node_that_shuts_itself_down_is_reported(tmp_path: Path) -> None:
    node, events = _node(tmp_path, "print('fatal: store invalid'); raise SystemExit(3)")
    node.start()
    assert _wait_for(events, "node.exit") == {"status": 3}
    assert "fatal: store invalid" in (tmp_path / "broker.log").read_text()


@pytest.mark.processes
def test_a_node_the_lab_kills_is_not_an_exit(tmp_path: Path) -> None:
    node, events = _node(tmp_path, "import time; print('up', flush=True); time.sleep(60)")
    node.start()
    time.sleep(0.3)
    node.kill()
    time.sleep(0.5)
    kinds = [k for k, _ in events.kinds]
    assert "node.kill" in kinds and "node.exit" not in kinds
