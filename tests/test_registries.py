"""Scenarios and targets by name: the lab's own, then installed packages' entry points
(lab.ground.plugins, scenarios.catalog, lab.targets.catalog). Entry points here are real
`importlib.metadata.EntryPoint` values naming objects of this module, as a package's
metadata would; nothing is installed."""

from __future__ import annotations

from importlib.metadata import EntryPoint

import pytest

import scenarios.catalog as scenario_catalog
from lab.ground.errors import PluginError, UsageError
from lab.ground.plugins import BUILT_IN, SCENARIO_GROUP, TARGET_GROUP, installed
from lab.targets import catalog as target_catalog
from lab.targets.broker_ref import BrokerRefTarget
from scenarios.base import Scenario
from scenarios.catalog import RUNNABLE, SCENARIOS, scenario_named

MINE = scenario_named("single-node-crash").__class__(
    **{**vars(scenario_named("single-node-crash")), "name": "mine"}
)
MISNAMED = MINE
NOT_A_SCENARIO = 42


def make_mine() -> Scenario:
    return MINE


class OwnBroker(BrokerRefTarget):
    """broker_ref under another name: a target from outside the lab."""

    name = "own-broker"


class VersionedBroker(OwnBroker):
    name = "versioned-broker"
    default_version = "2.0"

    def __init__(self, version: str = "2.0") -> None:
        super().__init__()
        self.version = version


class Nameless:
    name = "nameless"


def _points(group: str, **named: str) -> list[EntryPoint]:
    return [EntryPoint(name, f"{__name__}:{attr}", group) for name, attr in named.items()]


def _scenarios(**named: str) -> scenario_catalog.Registry[Scenario]:
    points = _points(SCENARIO_GROUP, **named)
    return scenario_catalog.registry(lambda: installed(SCENARIO_GROUP, points))


def _targets(**named: str) -> target_catalog.Registry[target_catalog.TargetFactory]:
    points = _points(TARGET_GROUP, **named)
    return target_catalog.registry(lambda: installed(TARGET_GROUP, points))


def test_the_lab_s_own_scenarios_keep_their_names_order_and_message() -> None:
    found = _scenarios()
    assert found.names() == tuple(SCENARIOS)
    assert found.get("master-failure") is SCENARIOS["master-failure"]
    assert found.source("master-failure") == BUILT_IN
    with pytest.raises(UsageError) as refused:
        scenario_named("nope")
    known = ", ".join(sorted(SCENARIOS))
    assert str(refused.value) == f"unknown scenario 'nope' (known: {known}; see `lab list`)"


def test_an_entry_point_adds_a_scenario_after_the_lab_s_own() -> None:
    found = _scenarios(mine="MINE")
    assert found.names() == (*SCENARIOS, "mine")
    assert found.get("mine") is MINE
    assert found.source("mine") == f"entry point ({__name__}:MINE)"
    assert _scenarios(mine="make_mine").get("mine") is MINE  # a function that returns one
    with pytest.raises(UsageError, match=r"unknown scenario 'other' \(known: .*mine"):
        found.get("other")


@pytest.mark.parametrize(
    ("named", "said"),
    [
        ({"mine": "NOT_A_SCENARIO"}, "names a int, not a Scenario"),
        ({"theirs": "MISNAMED"}, "its scenario is called 'mine': name the entry point so"),
        ({"mine": "NO_SUCH_NAME"}, "AttributeError"),
    ],
    ids=["not-a-scenario", "misnamed", "missing"],
)
def test_a_wrong_entry_point_is_one_line_naming_it(named: dict[str, str], said: str) -> None:
    name = next(iter(named))
    with pytest.raises(PluginError) as refused:
        _scenarios(**named).get(name)
    line = str(refused.value)
    assert line.startswith(f"lab.scenarios entry point {name!r} entry point (")
    assert said in line and "\n" not in line


def test_an_entry_point_may_not_take_a_name_of_the_lab_s_own() -> None:
    """The lab's own is what runs (`lab run master-failure` is never another package's);
    the list of names, as `lab list` shows it, says what is wrong."""
    found = _scenarios(**{"master-failure": "MINE"})
    assert found.get("master-failure") is SCENARIOS["master-failure"]
    with pytest.raises(PluginError, match="'master-failure' is the name of one of the lab's own"):
        found.names()
    targets = _targets(broker_ref="OwnBroker")
    assert isinstance(target_catalog.make_target("broker_ref", targets), BrokerRefTarget)
    with pytest.raises(PluginError, match="'broker_ref' is the name of one of the lab's own"):
        targets.names()


def test_a_broken_entry_point_spoils_only_its_own_name() -> None:
    found = _scenarios(mine="MINE", broken="NO_SUCH_NAME")
    assert found.get("mine") is MINE
    assert found.get("master-failure") is SCENARIOS["master-failure"]
    with pytest.raises(PluginError):
        found.get("broken")


def test_a_name_declared_twice_is_refused() -> None:
    points = [
        EntryPoint("mine", f"{__name__}:MINE", SCENARIO_GROUP),
        EntryPoint("mine", f"{__name__}:make_mine", SCENARIO_GROUP),
    ]
    with pytest.raises(PluginError, match="'mine' is declared twice"):
        installed(SCENARIO_GROUP, points)


def test_runnable_names_are_the_lab_s_own_then_every_entry_point_s() -> None:
    assert scenario_catalog.runnable_names()[: len(RUNNABLE)] == tuple(RUNNABLE)
    assert "incident" not in scenario_catalog.runnable_names()


def test_targets_keep_their_names_and_message() -> None:
    found = _targets()
    assert found.names() == target_catalog.TARGETS
    with pytest.raises(UsageError) as refused:
        target_catalog.make_target("nope", found)
    assert str(refused.value) == f"unknown target 'nope' (known: {', '.join(found.names())})"


def test_an_entry_point_adds_a_target() -> None:
    found = _targets(**{"own-broker": "OwnBroker"})
    made = target_catalog.make_target("own-broker", found)
    assert isinstance(made, OwnBroker) and made.name == "own-broker"
    assert found.source("own-broker") == f"entry point ({__name__}:OwnBroker)"
    assert found.names() == (*target_catalog.TARGETS, "own-broker")


@pytest.mark.parametrize(
    ("named", "said"),
    [
        ({"wrong-name": "OwnBroker"}, "its target is called 'own-broker'"),
        ({"nameless": "Nameless"}, "makes no Target (lab.api.Target): it lacks check, command"),
        ({"a-number": "NOT_A_SCENARIO"}, "names a int, not a target's class or factory"),
    ],
    ids=["misnamed", "not-a-target", "not-callable"],
)
def test_a_wrong_target_entry_point_is_one_line(named: dict[str, str], said: str) -> None:
    name = next(iter(named))
    with pytest.raises(PluginError) as refused:
        target_catalog.make_target(name, _targets(**named))
    assert said in str(refused.value) and f"lab.targets entry point {name!r}" in str(refused.value)


def test_a_version_is_asked_of_a_target_that_has_versions() -> None:
    found = _targets(**{"versioned-broker": "VersionedBroker", "own-broker": "OwnBroker"})
    assert target_catalog.make_target("versioned-broker", found).version == "2.0"
    assert target_catalog.make_target("versioned-broker@1.5", found).version == "1.5"
    with pytest.raises(UsageError, match="'own-broker' has no versions to choose from: drop @1"):
        target_catalog.make_target("own-broker@1", found)
    with pytest.raises(UsageError, match="'broker_ref' has no versions"):
        target_catalog.make_target("broker_ref@0.1")
    brokerj = target_catalog.make_target("qpid-broker-j@9.1.0")
    assert (brokerj.version, brokerj.default_version) == ("9.1.0", "9.2.1")  # type: ignore[attr-defined]


@pytest.mark.parametrize("ref", ["qpid-broker-j@", "@9.1.0", "qpid-broker-j@9 1", "a@b@c"])
def test_a_bad_target_reference_is_refused(ref: str) -> None:
    with pytest.raises(UsageError, match="write NAME@VERSION"):
        target_catalog.make_target(ref)
