"""A schedule is checked as a whole before anything starts (faults.schedule_check): each
refusal, and what is accepted at its edges."""

from __future__ import annotations

import pytest

from faults.schedule_check import check_schedule
from lab.ground.errors import UsageError
from lab.ground.faultops import FaultOp

NODES = ("n1", "n2", "n3")


def _window(
    fault: str, target: str, start: float, end: float, fault_id: str = "f1", **params: str
) -> list[FaultOp]:
    return [
        FaultOp(at_s=start, action="start", fault=fault, target=target, id=fault_id, params=params),
        FaultOp(at_s=end, action="stop", fault=fault, target=target, id=fault_id, params=params),
    ]


def test_a_fault_may_start_at_zero_and_heal_as_the_load_ends() -> None:
    check_schedule(_window("kill", "n1", 0.0, 12.0), NODES, 12.0)
    check_schedule(_window("kill", "n1", 0.5, 1.0), NODES, 12.0)


def test_back_to_back_faults_on_one_link_are_not_an_overlap() -> None:
    ops = _window("latency", "n1_to_n2", 2.0, 5.0) + _window("latency", "n1_to_n2", 5.0, 8.0, "f2")
    check_schedule(ops, NODES, 12.0)
    overlapping = _window("latency", "n1_to_n2", 2.0, 5.1) + _window(
        "latency", "n1_to_n2", 5.0, 8.0, "f2"
    )
    with pytest.raises(UsageError, match=r"fault f2 .*overlaps fault f1 on the same link"):
        check_schedule(overlapping, NODES, 12.0)


@pytest.mark.parametrize(
    ("ops", "managed", "said"),
    [
        (
            _window("kill", "n9", 1.0, 2.0),
            False,
            r"^fault f1 \(kill n9 at 1 s\): target: unknown node 'n9' \(nodes: n1, n2, n3\)$",
        ),
        (_window("latency", "n9_to_n1", 1.0, 2.0), False, r"target: unknown node 'n9'"),
        (_window("latency", "n1_to_n9", 1.0, 2.0), False, r"target: unknown node 'n9'"),
        (_window("latency", "n1_n2", 1.0, 2.0), True, r"'n1_n2' is not a link"),
        (_window("latency", "client_vip", 1.0, 2.0), False, r"'client_vip' is not a link"),
        (
            _window("partition", "group", 1.0, 2.0),
            False,
            r"params\.sides is missing: write the two sides as 'n1\|n2,n3'$",
        ),
        (
            _window("partition", "group", 1.0, 2.0, sides="n1"),
            False,
            r"target: partition sides 'n1'",
        ),
        (
            _window("restart_cluster", "cluster", 1.0, 2.0),
            False,
            r"target: restart_cluster needs an active-passive cluster$",
        ),
        (_window("kill", "manager", 1.0, 2.0), False, r"only kill and pause act on the cluster"),
        (_window("kill", "n1", -1.0, 2.0), False, r"at_s cannot be negative"),
        (_window("kill", "n1", 1.0, 12.5), False, r"at_s is after the load ends \(duration_s 12\)"),
    ],
)
def test_each_refusal_names_the_fault_and_the_problem(
    ops: list[FaultOp], managed: bool, said: str
) -> None:
    with pytest.raises(UsageError, match=said):
        check_schedule(ops, NODES, 12.0, managed=managed)


def test_a_kill_as_a_hosts_crash_takes_host_true_or_false_and_never_on_the_manager() -> None:
    def kill(target: str, **params: object) -> list[FaultOp]:
        return [
            FaultOp(1.0, "start", "kill", target, "f1", params=params),  # type: ignore[arg-type]
            FaultOp(2.0, "stop", "kill", target, "f1", params=params),  # type: ignore[arg-type]
        ]

    check_schedule(kill("n1", host=True), NODES, 12.0)
    check_schedule(kill("@master", host=False), NODES, 12.0)
    check_schedule(kill("manager", host=False), NODES, 12.0, managed=True)
    for params, said in (
        ({"host": "yes"}, r"params: host is true or false, not 'yes'$"),
        (
            {"host": True, "signal": 9},
            r"params: kill takes only host \(true or false\), not signal$",
        ),
    ):
        with pytest.raises(UsageError, match=r"^fault f1 \(kill n1 at 1 s\): " + said):
            check_schedule(kill("n1", **params), NODES, 12.0)
    with pytest.raises(UsageError, match="the cluster manager has no node links to cut"):
        check_schedule(kill("manager", host=True), NODES, 12.0, managed=True)


def test_what_only_an_active_passive_cluster_accepts() -> None:
    for ops in (
        _window("restart_cluster", "cluster", 1.0, 2.0),
        _window("latency", "client_vip", 1.0, 2.0),
        _window("kill", "manager", 1.0, 2.0),
    ):
        check_schedule(ops, NODES, 12.0, managed=True)
        with pytest.raises(UsageError):
            check_schedule(ops, NODES, 12.0)  # not managed unless told


def test_a_heal_of_another_fault_is_refused_naming_both() -> None:
    ops = [
        FaultOp(at_s=1.0, action="start", fault="kill", target="n1", id="f1"),
        FaultOp(at_s=2.0, action="stop", fault="kill", target="n2", id="f1"),
    ]
    with pytest.raises(UsageError, match=r"heals kill n2, but f1 started as kill n1$"):
        check_schedule(ops, NODES, 12.0)


def test_overlapping_link_faults_are_found_behind_a_node_fault() -> None:
    ops = [
        *_window("kill", "n3", 0.5, 1.0, "f0"),
        *_window("latency", "n1_to_n2", 2.0, 6.0, "f1"),
        *_window("latency", "n1_to_n2", 5.0, 8.0, "f2"),
    ]
    with pytest.raises(UsageError, match=r"overlaps fault f1"):
        check_schedule(ops, NODES, 12.0)
