"""A container's `node.kill` event is recorded when the kill is ordered, before the engine
answers: the engine delivers SIGKILL early in the call and answers only once it has seen the
container stop, and a backup promoted meanwhile is no second master. A fake container stands
in for the engine (fast unit test of the code above it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from docker.errors import NotFound

from lab.backends.docker.node_container import NodeContainer
from lab.ground.nodes import NodePlan
from lab.targets.catalog import make_target


class _Recorder:
    def __init__(self) -> None:
        self.seen: list[str] = []

    def emit(self, kind: str, node: str | None = None, **fields: Any) -> None:
        self.seen.append(f"event:{kind}")


class _Container:
    name = "lab-test-n1"

    def __init__(self, seen: list[str], gone: bool = False) -> None:
        self.attrs: dict[str, Any] = {"State": {"Status": "running", "Pid": 4242}}
        self._seen = seen
        self._gone = gone

    def reload(self) -> None:
        return None

    def kill(self) -> None:
        self._seen.append("engine:kill")
        if self._gone:
            raise NotFound("no such container")
        self.attrs["State"] = {"Status": "exited", "Pid": 0, "ExitCode": 137}

    def wait(self, timeout: float) -> dict[str, int]:
        self._seen.append("engine:wait")
        return {"StatusCode": 137}


def _node(tmp_path: Path, events: _Recorder, container: _Container) -> NodeContainer:
    plan = NodePlan("n1", 5672, 8080, 7000, tmp_path / "data", tmp_path / "n1")
    node = NodeContainer(plan, lambda: container, make_target("broker_ref"), events, True)  # type: ignore[arg-type]
    node.container = container  # type: ignore[assignment]
    return node


def test_the_kill_is_recorded_before_the_engine_is_asked(tmp_path: Path) -> None:
    events = _Recorder()
    container = _Container(events.seen)
    _node(tmp_path, events, container).kill()
    assert events.seen == ["event:node.kill", "engine:kill", "engine:wait"]


def test_a_container_already_gone_is_recorded_killed_once(tmp_path: Path) -> None:
    events = _Recorder()
    container = _Container(events.seen, gone=True)
    node = _node(tmp_path, events, container)
    node.kill()
    assert events.seen == ["event:node.kill", "engine:kill"]
    container.attrs["State"] = {"Status": "exited"}
    node.kill()  # not running any more: nothing ordered, nothing recorded
    assert events.seen == ["event:node.kill", "engine:kill"]
