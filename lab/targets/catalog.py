"""Every target by name; each is constructed once per run, by whoever composes it."""

from __future__ import annotations

from lab.ground.errors import UsageError
from lab.ground.spec import TARGETS
from lab.targets.broker_ref import BrokerRefTarget
from lab.targets.protocol import Target

__all__ = ["TARGETS", "make_target"]


def make_target(name: str) -> Target:
    """The target called `name`; a UsageError naming the known ones otherwise."""
    if name == "broker_ref":
        return BrokerRefTarget()
    if name == "qpid-broker-j":
        # Imported here: Broker-J's distribution is looked at only by those who ask for it.
        from lab.targets.brokerj.target import BrokerJTarget

        return BrokerJTarget()
    if name == "artemis":
        from lab.targets.artemis.target import ArtemisTarget

        return ArtemisTarget()
    raise UsageError(f"unknown target {name!r} (known: {', '.join(TARGETS)})")
