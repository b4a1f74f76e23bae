"""A cluster's side of the group's membership (lab.backends.base): spares not started with
the group and not waited for, `add_node` starting one, `remove_node` stopping a node and
having the master remove it (trying again while the master refuses or there is none), and
the management call itself against a real HTTP server on 127.0.0.1. Runs against both
targets are at the end: Broker-J's, marked `brokerj` as tests/test_brokerj.py's (broker_ref's
are the scenario suite's, scenarios/test_scenarios.py, on both backends)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from lab.backends import base
from lab.backends.base import ClusterBase
from lab.ground.errors import ClusterError
from lab.ground.nodes import ClusterPlan, NodePlan, NodeStatus
from lab.ground.spec import Durability, GroupSettings, Topology
from lab.run.runner import RunOutcome
from lab.targets.management import Credentials, ManagementClient, ManagementRefused

NAMES = ("n1", "n2", "n3")


class _Node:
    def __init__(self, plan: NodePlan, log: list[str]) -> None:
        self.plan = plan
        self.paused = False
        self.started = False
        self._log = log

    @property
    def running(self) -> bool:
        return self.started

    def start(self) -> None:
        self.started = True
        self._log.append(f"start {self.plan.name}")

    def stop(self, timeout_s: float = 5.0) -> None:
        self.started = False
        self._log.append(f"stop {self.plan.name}")

    def kill(self) -> None:
        self.stop()

    def pause(self) -> None:
        self.paused = True

    def resume(self) -> None:
        self.paused = False

    def exit_detail(self) -> str:
        return "exited with status 1"


class _Management:
    """The master's management API: refuses removals with the statuses it is given first."""

    def __init__(self, name: str, log: list[str], refusals: list[int]) -> None:
        self.name = name
        self._log = log
        self._refusals = refusals

    def remove_node(self, other: str) -> None:
        self._log.append(f"{self.name} removes {other}")
        if self._refusals:
            raise ManagementRefused(self._refusals.pop(0), f"{other} is still active")


class _Target:
    ready_timeout_s = 1.0
    founded_by_first_node = False
    election_allowance_s = 0.0

    def __init__(self, log: list[str], refusals: list[int] | None = None) -> None:
        self.roles: dict[str, str] = {"n1": "MASTER", "n2": "REPLICA", "n3": "REPLICA"}
        self._log = log
        self.refusals = [] if refusals is None else refusals

    def status(self, node: NodePlan, timeout_s: float = 1.0) -> NodeStatus | None:
        role = self.roles.get(node.name)
        return None if role is None else NodeStatus(node.name, role)

    def management(self, node: NodePlan) -> _Management:
        return _Management(node.name, self._log, self.refusals)


class _Events:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None, dict[str, Any]]] = []

    def emit(self, kind: str, node: str | None = None, **fields: Any) -> None:
        self.seen.append((kind, node, fields))


class _Cluster(ClusterBase[_Node]):
    def __init__(self, target: _Target, tmp: Path, spares: tuple[str, ...] = ()) -> None:
        self.target = target  # type: ignore[assignment]
        self.fake = target
        self.topology = Topology(nodes=3, spares=spares)
        self.group = GroupSettings()
        self.durability = Durability()
        self.fake_events = _Events()
        self.events = self.fake_events
        self.nodes = {}
        self.plan = ClusterPlan(
            group="lab",
            nodes=tuple(NodePlan(n, 1, 2, 3, tmp / n / "data", tmp / n) for n in NAMES),
            durability=self.durability,
            spares=spares,
        )


def _started(
    tmp_path: Path, refusals: list[int] | None = None, spares: tuple[str, ...] = ()
) -> tuple[_Cluster, list[str]]:
    log: list[str] = []
    cluster = _Cluster(_Target(log, refusals), tmp_path, spares)
    cluster._start_in_order(lambda plan: _Node(plan, log))
    return cluster, log


def test_a_spare_is_planned_but_not_started_nor_waited_for(tmp_path: Path) -> None:
    cluster, log = _started(tmp_path, spares=("n3",))
    assert log == ["start n1", "start n2"]
    assert set(cluster.nodes) == set(NAMES)  # its handle is there for add_node
    cluster.fake.roles.pop("n3")  # it does not answer
    assert cluster.wait_ready() == "n1"
    assert cluster.outside() == {"n3"}


def test_add_node_starts_the_spare_which_is_then_waited_for(tmp_path: Path) -> None:
    cluster, log = _started(tmp_path, spares=("n3",))
    cluster.add_node("n3")
    assert log[-1] == "start n3" and cluster.outside() == frozenset()
    assert ("node.add", "n3", {}) in cluster.fake_events.seen
    cluster.fake.roles["n3"] = "WAITING"  # not caught up yet
    with pytest.raises(ClusterError, match=r"not ready within 1.0 s: .*'n3': 'WAITING'"):
        cluster.wait_ready()
    with pytest.raises(ClusterError, match=r"^add_node: n2 is a member of the group already$"):
        cluster.add_node("n2")


def test_remove_node_stops_the_node_then_the_master_removes_it_trying_again(
    tmp_path: Path,
) -> None:
    cluster, log = _started(tmp_path, refusals=[409, 422])
    cluster.fake.roles.pop("n2")  # stopped: no answer
    cluster.remove_node("n2")
    assert log[3:] == ["stop n2", "n1 removes n2", "n1 removes n2", "n1 removes n2"]
    assert cluster.removed_nodes() == ("n2",) and cluster.outside() == {"n2"}
    (kind, node, fields) = cluster.fake_events.seen[-1]
    assert (kind, node, fields["by"]) == ("node.remove", "n2", "n1")
    assert fields["refused"] == [
        "n1 refused: 409: n2 is still active",
        "n1 refused: 422: n2 is still active",
    ]
    assert cluster.wait_ready() == "n1"  # a removed node is not waited for
    cluster.add_node("n2")  # started again under its old name: still outside the group
    assert log[-1] == "start n2" and cluster.outside() == {"n2"}
    with pytest.raises(ClusterError, match=r"^remove_node: n2 was removed already$"):
        cluster.remove_node("n2")


def test_a_node_that_is_no_member_is_not_tried_again(tmp_path: Path) -> None:
    cluster, log = _started(tmp_path, refusals=[404])
    with pytest.raises(ClusterError, match=r"^remove_node n3: n1 said 404: n3 is still active$"):
        cluster.remove_node("n3")
    assert log.count("n1 removes n3") == 1 and cluster.removed_nodes() == ()


def test_a_group_without_a_master_is_waited_for_then_given_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(base, "REMOVAL_WAIT_S", 0.3)
    cluster, log = _started(tmp_path)
    cluster.fake.roles = {"n2": "WAITING", "n3": "WAITING"}
    with pytest.raises(ClusterError, match=r"not removed within 0.3 s: no one master among"):
        cluster.remove_node("n1")
    assert not any("removes" in line for line in log)


# -- the management call ----------------------------------------------------------------------


@pytest.fixture
def api() -> Iterator[tuple[ManagementClient, list[tuple[str, str, str]], list[int]]]:
    """A management API on 127.0.0.1 that records each request and answers the statuses
    it is given (200 when none is left)."""
    seen: list[tuple[str, str, str]] = []
    answers: list[int] = []

    class Handler(BaseHTTPRequestHandler):
        def do_DELETE(self) -> None:
            seen.append(("DELETE", self.path, self.headers.get("Authorization", "")))
            status = answers.pop(0) if answers else 200
            body = b"" if status == 200 else b'{"errorMessage": "node n3 is still active"}'
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        yield ManagementClient(url, "n1", Credentials("admin", "secret")), seen, answers
    finally:
        server.shutdown()
        server.server_close()


def test_remove_node_deletes_the_remote_replication_node_of_this_node(
    api: tuple[ManagementClient, list[tuple[str, str, str]], list[int]],
) -> None:
    client, seen, answers = api
    client.remove_node("n3")
    assert seen == [("DELETE", "/api/latest/remotereplicationnode/n1/n3", "Basic YWRtaW46c2VjcmV0")]
    answers.append(409)
    with pytest.raises(ManagementRefused, match=r"^409: node n3 is still active$") as refused:
        client.remove_node("n3")
    assert refused.value.status == 409


# -- runs -------------------------------------------------------------------------------------


def _assert_held(outcome: RunOutcome) -> None:
    assert outcome.check.acknowledged > 0, "the workload acknowledged nothing"
    assert outcome.verdict.held, (
        f"{outcome.summary}\nrun folder: {outcome.folder.path}\nreproduce: {outcome.reproduce}"
    )


def _docker_or_skip() -> None:
    from lab.backends.docker.engine import can_install, engine_answers
    from lab.pytest_plugin import skip_unless_ci

    if not engine_answers() and not can_install():
        skip_unless_ci("no Docker engine answers, and the lab installs one only as root on Debian")


RunLab = Callable[..., RunOutcome]


@pytest.mark.brokerj
@pytest.mark.processes
@pytest.mark.parametrize(
    "scenario", ["grow-group", pytest.param("remove-replica", marks=pytest.mark.long)]
)
def test_the_membership_scenarios_hold_on_local_jvms(scenario: str, lab_run: RunLab) -> None:
    _assert_held(lab_run(scenario, backend="process", target="qpid-broker-j"))


@pytest.mark.brokerj
@pytest.mark.docker
@pytest.mark.long  # (opt-in, --lab-long) 45 s; the same backend path runs for broker_ref
def test_a_group_grows_in_containers_of_broker_j(lab_run: RunLab) -> None:
    _docker_or_skip()
    _assert_held(lab_run("grow-group", backend="docker", target="qpid-broker-j"))
