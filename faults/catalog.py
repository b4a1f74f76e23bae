"""Every fault kind the lab knows, by name."""

from __future__ import annotations

from collections.abc import Mapping

from faults.cluster_faults import Promote, RestartCluster
from faults.docker_faults import Disconnect, DiskFill
from faults.fault import Fault
from faults.host_faults import CLOCK_FAULTS, Netem
from faults.membership_faults import AddNode, RemoveNode
from faults.operator_faults import DesignatePrimary, QuorumOverride, SetPriority, TransferMaster
from faults.partition_faults import Isolate, OneWayPartition, Partition
from faults.process_faults import FullGc, GracefulStop, Kill, Pause
from faults.proxy_faults import TOXIC_FAULTS, Cut
from lab.ground.errors import UsageError

__all__ = ["FAULTS", "fault_for"]

FAULTS: Mapping[str, Fault] = {
    f.kind: f
    for f in (
        Kill(),
        GracefulStop(),
        AddNode(),
        RemoveNode(),
        Pause(),
        FullGc(),
        Cut(),
        *TOXIC_FAULTS,
        DiskFill(),
        Disconnect(),
        Partition(),
        Isolate(),
        OneWayPartition(),
        DesignatePrimary(),
        QuorumOverride(),
        SetPriority(),
        TransferMaster(),
        Promote(),
        RestartCluster(),
        *CLOCK_FAULTS,
        Netem(),
    )
}


def fault_for(kind: str) -> Fault:
    try:
        return FAULTS[kind]
    except KeyError:
        raise UsageError(f"unknown fault {kind!r} (known: {', '.join(sorted(FAULTS))})") from None
