"""A heal the target refuses in a state the run led it to: a designated primary thrown out
of its group (DETACHED) refuses to clear its designation; the nemesis records it and goes
on, while any other failed heal still ends the run."""

from __future__ import annotations

from typing import Any

import pytest

from faults.fault import HealRefused
from faults.nemesis import Nemesis
from faults.operator_faults import DesignatePrimary
from lab.ground.errors import ClusterError
from lab.ground.faultops import FaultOp


class _Answered(ClusterError):
    """A refusal with the node's answer (as the management client's ManagementRefused)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status


class _Node:
    """A node that takes designations until `refusal` is set, and reports `role`."""

    def __init__(self, role: str) -> None:
        self.role = role
        self.refusal: ClusterError | None = None
        self.designated = False
        self.asked = 0

    def node_attributes(self) -> dict[str, Any]:
        return {"name": "n2", "role": self.role, "designatedPrimary": self.designated}

    def set_attributes(self, **attributes: Any) -> None:
        self.asked += 1
        if self.refusal is not None:
            raise self.refusal
        self.designated = bool(attributes["designatedPrimary"])

    def ha_action(self, **request: Any) -> None:
        raise AssertionError("not an active-passive broker")


class _Cluster:
    def __init__(self, node: _Node) -> None:
        self.node = node

    def management(self, name: str) -> _Node:
        assert name == "n2"
        return self.node


def _op(action: str) -> FaultOp:
    return FaultOp(at_s=1.0, action=action, fault="designate_primary", target="n2", id="f4")


ERROR_500 = _Answered(500, "There was an error when performing request")


def test_a_detached_node_refusing_to_clear_its_designation_is_a_refused_heal() -> None:
    node = _Node("DETACHED")
    node.refusal = ERROR_500
    with pytest.raises(HealRefused, match="n2 refused to clear designatedPrimary while DETACHED"):
        DesignatePrimary().heal(_Cluster(node), _op("stop"))
    # the message carries the node's answer, and the answer stays the cause
    with pytest.raises(HealRefused, match="500: There was an error") as raised:
        DesignatePrimary().heal(_Cluster(node), _op("stop"))
    assert raised.value.__cause__ is ERROR_500


@pytest.mark.parametrize(
    ("role", "refusal"),
    [
        ("REPLICA", ERROR_500),  # in the group: the refusal is a failure
        ("MASTER", _Answered(422, "bad value")),
        ("DETACHED", ClusterError("management API of n2: read timed out")),  # no answer
    ],
)
def test_any_other_failure_to_clear_is_raised_as_it_is(role: str, refusal: ClusterError) -> None:
    node = _Node(role)
    node.refusal = refusal
    with pytest.raises(ClusterError) as raised:
        DesignatePrimary().heal(_Cluster(node), _op("stop"))
    assert raised.value is refusal


Log = list[dict[str, Any]]
Emitted = list[tuple[str, dict[str, Any]]]


def _nemesis(node: _Node) -> tuple[Nemesis, Log, Emitted, list[str]]:
    log: Log = []
    events: Emitted = []

    class _Events:
        def emit(self, kind: str, node: str | None = None, **fields: Any) -> None:
            events.append((kind, fields))

    changes: list[str] = []
    nemesis = Nemesis(
        _Cluster(node),
        faults={"designate_primary": DesignatePrimary()},
        log=log.append,
        events=_Events(),
        on_change=lambda what, op: changes.append(f"{what} {op.id}"),
    )
    return nemesis, log, events, changes


def test_the_nemesis_records_a_refused_heal_and_goes_on() -> None:
    node = _Node("REPLICA")
    nemesis, log, events, changes = _nemesis(node)
    nemesis.apply(_op("start"))
    node.role, node.refusal = "DETACHED", ERROR_500
    nemesis.apply(_op("stop"))  # no exception: the run goes on
    assert node.designated  # the node kept its designation: nothing pretends otherwise
    assert [(e["action"], e["ok"]) for e in log] == [("start", True), ("stop", False)]
    assert "refused to clear designatedPrimary" in log[-1]["error"]
    [ended] = [fields for kind, fields in events if kind == "fault.end"]
    assert ended["refused"] is True and ended["id"] == "f4" and "500" in ended["error"]
    assert changes == ["applied f4", "refused f4"]
    assert nemesis.healed == 0
    nemesis.heal_all()  # nothing left to heal
    assert node.asked == 2


def test_a_refused_heal_at_the_end_is_not_counted_as_healed() -> None:
    node = _Node("REPLICA")
    nemesis, _, _, _ = _nemesis(node)
    nemesis.apply(_op("start"))
    node.role, node.refusal = "DETACHED", ERROR_500
    nemesis.heal_all()
    assert nemesis.healed_at_end == []


def test_a_heal_that_fails_otherwise_still_ends_the_run() -> None:
    node = _Node("REPLICA")
    nemesis, log, events, _ = _nemesis(node)
    nemesis.apply(_op("start"))
    node.refusal = ERROR_500
    with pytest.raises(ClusterError, match="500"):
        nemesis.apply(_op("stop"))
    [ended] = [fields for kind, fields in events if kind == "fault.end"]
    assert "refused" not in ended and "500" in ended["error"]
    assert log[-1]["ok"] is False
