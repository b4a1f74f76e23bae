"""The lab's public names: what a user's own test suite, scenario or target may import and
rely on. Everything else in `lab` is the lab's inside and may change without notice.

Running (docs/library.md; the pytest fixture `lab_run` does the same in a test):

    run(what, runs_dir, seed=…, backend=…, target="NAME[@VERSION]", …) -> RunOutcome
        what: a scenario's name (`lab list`), an incident file's Path, or a Scenario
    RunOutcome   .verdict (Verdict) .check (CheckResult) .events .metrics .folder .spec

A scenario (frozen data; the schedule a pure function of the run's seeded random.Random):

    Scenario(name, summary, prediction, schedule, topology=Topology(nodes=3), workload=…,
             durability=…, group=…)
    schedule:  scheduled(fault_window("kill", "@master", 4.0, 3.0, "f1"), …)   fixed
               fault_when("new-master", 10.0, "kill", "@master", 8.0, 2.0, "f2")   waits
               def schedule(spec: RunSpec, rng: random.Random) -> tuple[FaultOp, ...]
    Prediction(text, loss="none"|"detected"|"allowed", duplicates_allowed, two_masters,
               expect=(LogSeen(…), RoleAtEnd(…), ServiceResumed(…), a user's Expectation))

A target (a class or factory named by an entry point of the `lab.targets` group):

    Target           the protocol: name, timings, command(cluster, node), status(node) …
    ClusterPlan, NodePlan, NodeStatus, LogRecord, ContainerLaunch
    RestManagement   status() from a Broker-J-style management API
    BrokerRefTarget, broker_ref_config   the reference broker's own, to build on
    Versioned        a target with versions (`default_version`, `version`)

Entry point groups: SCENARIO_GROUP (`lab.scenarios`), TARGET_GROUP (`lab.targets`).
Errors: LabError, the root; UsageError, InputError, SetupError, PluginError, ClusterError.
"""

from __future__ import annotations

from lab.ground.errors import (
    ClusterError,
    InputError,
    LabError,
    PluginError,
    SetupError,
    UsageError,
)
from lab.ground.faultops import FaultOp
from lab.ground.nodes import ClusterPlan, NodePlan, NodeStatus, TargetTraits
from lab.ground.plugins import SCENARIO_GROUP, TARGET_GROUP
from lab.ground.spec import Durability, GroupSettings, RunSpec, Topology, Workload
from lab.judge.checker import CheckResult
from lab.judge.expectations import (
    Expectation,
    LogSeen,
    RoleAtEnd,
    RoleNever,
    ServiceContinued,
    ServiceResumed,
    ServiceStopped,
)
from lab.judge.facts import RunFacts
from lab.judge.prediction import Prediction, Verdict
from lab.library import Runnable, run
from lab.run.runner import RunOutcome
from lab.targets.broker_ref import BrokerRefTarget
from lab.targets.broker_ref import node_config as broker_ref_config
from lab.targets.log_lines import LogRecord, parse_oplog_line
from lab.targets.protocol import ContainerLaunch, RestManagement, Target, Versioned
from scenarios.base import Scenario, ScheduleFn, fault_when, fault_window, scheduled, uniform

__all__ = [
    "SCENARIO_GROUP",
    "TARGET_GROUP",
    "BrokerRefTarget",
    "CheckResult",
    "ClusterError",
    "ClusterPlan",
    "ContainerLaunch",
    "Durability",
    "Expectation",
    "FaultOp",
    "GroupSettings",
    "InputError",
    "LabError",
    "LogRecord",
    "LogSeen",
    "NodePlan",
    "NodeStatus",
    "PluginError",
    "Prediction",
    "RestManagement",
    "RoleAtEnd",
    "RoleNever",
    "RunFacts",
    "RunOutcome",
    "RunSpec",
    "Runnable",
    "Scenario",
    "ScheduleFn",
    "ServiceContinued",
    "ServiceResumed",
    "ServiceStopped",
    "SetupError",
    "Target",
    "TargetTraits",
    "Topology",
    "UsageError",
    "Verdict",
    "Versioned",
    "Workload",
    "broker_ref_config",
    "fault_when",
    "fault_window",
    "parse_oplog_line",
    "run",
    "scheduled",
    "uniform",
]
