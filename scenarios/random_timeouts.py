"""A run's own timeouts, read from its settings, and fault windows calibrated to them.

HA bugs hide on either side of a timeout: a master cut off for less than the election
timeout keeps its role, one cut off for longer is deposed while its clients may still reach
it; a commit waits for its replicas only so long; a cluster manager calls a broker failed
only after its poll and its status timeout. A window of fixed seconds lands on one side of
each of them by chance. `window_s` draws a length shorter or longer than one of the run's
own timeouts instead.

    timeouts_of(spec)          → the named timeouts of the run's design, in seconds
    window_s(spec, rng, …)     → a window length: a timeout times a factor below or above 1
    judged_lease_s(spec)       → how long a master cut off must keep its role before the
                                 prediction can call it two masters

A timeout the brokers keep is not the only one that matters: a misbehaviour is found only
if it outlasts what the prediction tolerates. A master that never steps down is two masters
for as long as it is cut off, and `random`'s prediction allows two masters for a lease
(lab.judge.bounds.master_lease) counted from the others' election: a cut shorter than the
judged lease shows nothing, whatever the master does.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from lab.ground.spec import RunSpec
from lab.judge.bounds import Timings, master_lease

__all__ = ["FACTORS", "Timeout", "judged_lease_s", "timeouts_of", "window_s"]

# Below a timeout (the fault should be ridden out) and past it (the fault should be acted on).
FACTORS = (0.5, 0.8, 1.3, 2.0, 3.0)


@dataclass(frozen=True)
class Timeout:
    name: str
    seconds: float


def timeouts_of(spec: RunSpec) -> tuple[Timeout, ...]:
    """The timeouts a fault's length should be measured against, from the run's settings:
    a replicated group's heartbeat, election timeout (also how long a master keeps its lease
    without a quorum) and replica acknowledgement timeout; an active-passive cluster's link
    heartbeat (a backup is dead to its primary after two), the manager's poll plus its status
    timeout (when it calls a broker failed) and the recovering primary's wait for backups.
    A group's lease is how long a master cut off keeps its role at most: the silence before
    the others stand and their election (the judge's bound, lab.judge.bounds).

    A target with failure detection of its own (`spec.target_timeouts`, from
    TargetTraits.timeouts: RabbitMQ's net_ticktime) gives its own values under the same
    names instead: a window against broker_ref's election timeout says nothing of a broker
    that finds a silent peer gone only after several seconds."""
    if spec.target_timeouts:
        return tuple(Timeout(name, seconds) for name, seconds in spec.target_timeouts)
    group = spec.group
    if group.is_active_passive:
        ap = group.active_passive
        return (
            Timeout("link heartbeat x2", 2 * ap.link_heartbeat_interval_s),
            Timeout("manager detection", ap.status_poll_interval_s + ap.status_timeout),
            Timeout("backup timeout", ap.ha_backup_timeout_s),
            Timeout("link maintenance", ap.link_maintenance_interval_s),
        )
    ranks = max(0, spec.topology.nodes - 1)
    return (
        Timeout("heartbeat", group.heartbeat_interval_s),
        Timeout("election timeout", group.election_timeout_s),
        Timeout("election x2", 2 * group.election_timeout_s),
        # a master cut off is deposed after the silence and an election (lab.judge.bounds)
        Timeout("lease", group.election_timeout_s * (2 + 0.5 * ranks)),
        Timeout("replica timeout", group.insufficient_replicas_timeout_s),
        Timeout("judged lease", judged_lease_s(spec)),
    )


def judged_lease_s(spec: RunSpec) -> float:
    """How long a master cut off from its group must keep its role before a prediction that
    allows two masters for a lease ("beyond-lease") can see it: the others' silence and
    election (the second master begins), then the lease the judge allows (broker_ref's
    timeouts: lab.judge.bounds)."""
    timings = Timings.of(spec)
    elected = sum(timings.values[name].seconds for name in ("silence", "election"))
    return round(elected + master_lease(timings).seconds, 3)


def window_s(
    spec: RunSpec,
    rng: random.Random,
    *,
    shortest: float,
    longest: float,
    timeouts: tuple[Timeout, ...] | None = None,
) -> float:
    """A window's length: one of the run's timeouts (or of `timeouts`) times one of FACTORS,
    kept between `shortest` and `longest`; those that fall outside are drawn again (a few
    times, then the nearest bound)."""
    pool = timeouts or timeouts_of(spec)
    length = shortest
    for _ in range(8):
        length = rng.choice(pool).seconds * rng.choice(FACTORS)
        if shortest <= length <= longest:
            return round(length, 3)
    return round(min(max(length, shortest), longest), 3)
