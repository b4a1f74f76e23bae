"""Service-gap bounds from the timeouts a run is configured with.

A prediction that the service comes back (`ServiceResumed`) bounds the wait by a sum: what
no timeout covers (its `within_s`: the brokers' and the clients' own work), and the
timeouts on the way back, each named by the scenario and valued from the run's own
configuration (the group's settings, the target, the clients):

    silence     how long a group waits on a silent node before it acts on its absence
    election    an election, from its beginning to a master, as long as a peer that does
                not answer can hold it up
    primary     an election a designated primary wins alone (a group of two)
    reconnect   the clients back on the new master: one round over the failover list in
                which every other node keeps them waiting their connect timeout (their AMQP
                heartbeat), and the longest back-off between rounds
    restart     added by itself to a bound counted from a node's restart (the end of a kill
                or stop): how long the node took to say it was ready (its BRK-1004 line),
                as seen; without that line, the target's restart allowance. A JVM's start
                is no part of the documents' predictions, and on a busy machine it takes
                minutes

`silence`, `election` and `primary` are the target's own (a target with a model of its
own gives them: lab.targets.protocol.ServiceTimings); otherwise broker_ref's, and a bound
that adds any of them adds the target's election allowance once. A bound says which
timeouts it added and how much each was: a reason reads "expected within 8.05 s (2 s +
silence 0.6 s (the election timeout) + …)".

    Timings.of(spec, target, own) → Timings    the run's timeouts, by name
    timings.bound(within_s, terms, restarted) → Bound
    master_lease(timings) → Bound                how long two masters may overlap when one
                                                 was cut off ("beyond-lease")
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from lab.ground.nodes import BROKER_REF_TRAITS, TargetTraits
from lab.ground.spec import GroupSettings, RunSpec

__all__ = [
    "CLIENT_BACKOFF_MAX_S",
    "CLIENT_CONNECT_TIMEOUT_S",
    "LEASE_WORK_S",
    "TERMS",
    "Bound",
    "Timing",
    "Timings",
    "broker_ref_timings",
    "master_lease",
]

TERMS = ("silence", "election", "primary", "reconnect")
# The clients' own (clients/workload.py Backoff, clients/failover_link.py): the longest
# back-off between rounds over the failover list, and the connect timeout without a heartbeat.
CLIENT_BACKOFF_MAX_S = 0.25
CLIENT_CONNECT_TIMEOUT_S = 5.0
# What a master's stepping down and the lab's reading of it add to the lease (two_masters
# "beyond-lease"): its last in-flight work, the role report reaching the lab, a busy machine.
LEASE_WORK_S = 2.0


@dataclass(frozen=True)
class Timing:
    """A configured timeout a bound may add: its value in the run, and what it is."""

    seconds: float
    source: str

    def describe(self, name: str) -> str:
        return f"{name} {self.seconds:g} s ({self.source})"


@dataclass(frozen=True)
class Bound:
    """A bound on the service's return: its seconds and the parts they add up from."""

    seconds: float
    parts: tuple[str, ...]

    def describe(self) -> str:
        return " + ".join(self.parts)


def broker_ref_timings(group: GroupSettings, nodes: int) -> dict[str, Timing]:
    """broker_ref's group (broker_ref/self_elected.py, election.py): a replica stands when
    it has not heard from its master for an election timeout; candidates wait their rank's
    share of a timeout (half a timeout per rank) before standing, and a vote takes one more
    timeout at most; a designated primary stands at once."""
    timeout = group.election_timeout_s
    ranks = max(0, nodes - 1)
    return {
        "silence": Timing(timeout, "the election timeout"),
        "election": Timing(
            round(timeout * (1 + 0.5 * ranks), 3),
            f"the election timeout, and half of it for each of {ranks} lower ranks",
        ),
        "primary": Timing(timeout, "the election timeout"),
    }


@dataclass(frozen=True)
class Timings:
    """A run's timeouts by name (the module's TERMS), and its target's restart allowance."""

    values: Mapping[str, Timing] = field(default_factory=dict)
    restart: Timing | None = None
    allowance: Timing | None = None  # a target without a model of its own: its elections

    @staticmethod
    def of(
        spec: RunSpec,
        target: TargetTraits = BROKER_REF_TRAITS,
        own: Mapping[str, Timing] | None = None,
    ) -> Timings:
        """The timeouts of a run of `spec` against `target`, whose own model (`own`) gives
        its group's timeouts; without one, broker_ref's plus the target's election allowance."""
        nodes = spec.topology.nodes
        values = dict(own) if own is not None else broker_ref_timings(spec.group, nodes)
        allowance = None
        if own is None and target.election_allowance_s:
            allowance = Timing(target.election_allowance_s, f"{target.name}'s, measured")
        heartbeat = spec.workload.heartbeat_s
        connect = heartbeat if heartbeat > 0 else CLIENT_CONNECT_TIMEOUT_S
        others = max(1, nodes - 1)
        values["reconnect"] = Timing(
            round(others * connect + CLIENT_BACKOFF_MAX_S, 3),
            f"{others} × the clients' connect timeout {connect:g} s "
            f"+ their longest back-off {CLIENT_BACKOFF_MAX_S:g} s",
        )
        restart = target.restart_allowance_s
        shown = Timing(restart, f"{target.name}'s, measured") if restart else None
        return Timings(values, shown, allowance)

    def bound(
        self,
        within_s: float,
        terms: Sequence[str],
        restarted: bool = False,
        restart_seen: Timing | None = None,
    ) -> Bound:
        """`within_s` and the named timeouts, and after a restart the node's restart as seen
        (`restart_seen`) or else the target's restart allowance."""
        seconds = within_s
        parts = [f"{within_s:g} s"]
        for name in terms:
            found = self.values.get(name)
            if found is None:
                raise ValueError(f"no timeout named {name!r} (known: {', '.join(TERMS)})")
            seconds += found.seconds
            parts.append(found.describe(name))
        if self.allowance is not None and set(terms) & {"silence", "election", "primary"}:
            seconds += self.allowance.seconds
            parts.append(self.allowance.describe("election allowance"))
        if restarted and restart_seen is not None:
            seconds += restart_seen.seconds
            parts.append(restart_seen.describe("restart"))
        elif restarted and self.restart is not None:
            seconds += self.restart.seconds
            parts.append(self.restart.describe("restart allowance"))
        return Bound(round(seconds, 3), tuple(parts))


def master_lease(timings: Timings) -> Bound:
    """How long two nodes may be MASTER at once when one of them was cut off: the silence
    after which it should know it lost its quorum, an election's length, and LEASE_WORK_S
    (a prediction whose two_masters is "beyond-lease" allows this much, and no more)."""
    return timings.bound(LEASE_WORK_S, ["silence", "election"])
