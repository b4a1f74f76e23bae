"""Every target by name: the lab's own (`TARGETS`), then those installed packages add through
the `lab.targets` entry point group (lab.ground.plugins). Each is constructed once per run,
by whoever composes it.

    make_target("qpid-broker-j@9.1.0")    the target at a version (`NAME[@VERSION]`)
    target_names()                        built-ins, then entry points' names
    target_source(name)                   `built-in`, or the entry point and its package

An entry point names a factory of the target (usually its class): called with no argument
for the target's default version, and with `version=` when a version is named. A target
whose factory takes no `version` has none to choose from, and `@VERSION` is refused.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping

from lab.ground.errors import UsageError
from lab.ground.plugins import BUILT_IN, TARGET_GROUP, Plugin, Registry
from lab.ground.spec import TARGETS
from lab.ground.spec_words import split_target
from lab.targets.broker_ref import BrokerRefTarget
from lab.targets.protocol import Target, missing_members

__all__ = [
    "REGISTRY",
    "TARGETS",
    "TargetFactory",
    "make_target",
    "registry",
    "target_names",
    "target_source",
]

TargetFactory = Callable[..., Target]


def _built_in(name: str) -> TargetFactory:
    """The factory of one of the lab's own targets (imported when asked for)."""
    if name == "broker_ref":
        return BrokerRefTarget
    if name == "qpid-broker-j":
        # Imported here: Broker-J's distribution is looked at only by those who ask for it.
        from lab.targets.brokerj.target import BrokerJTarget

        return BrokerJTarget
    if name == "artemis":
        from lab.targets.artemis.target import ArtemisTarget

        return ArtemisTarget
    if name == "rabbitmq":
        from lab.targets.rabbitmq.target import RabbitMQTarget

        return RabbitMQTarget
    raise UsageError(f"unknown target {name!r} (known: {', '.join(TARGETS)})")


class _BuiltIns(Mapping[str, TargetFactory]):
    """TARGETS as a mapping whose factories are imported only when looked up."""

    def __getitem__(self, name: str) -> TargetFactory:
        if name not in TARGETS:
            raise KeyError(name)
        return _built_in(name)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(TARGETS)

    def __len__(self) -> int:
        return len(TARGETS)


def _factory_of(plugin: Plugin, loaded: object) -> TargetFactory:
    if not callable(loaded):
        raise plugin.refuse(f"names a {type(loaded).__name__}, not a target's class or factory")
    return loaded


def _unknown(name: str, known: tuple[str, ...]) -> str:
    return f"unknown target {name!r} (known: {', '.join(known)})"


def registry(plugins: Callable[[], tuple[Plugin, ...]] | None = None) -> Registry[TargetFactory]:
    """The registry of targets: the lab's own, then `plugins` (default: installed ones)."""
    return Registry(TARGET_GROUP, _BuiltIns, _factory_of, _unknown, plugins)


REGISTRY = registry()


def _takes_version(factory: TargetFactory) -> bool:
    try:
        return "version" in inspect.signature(factory).parameters
    except (TypeError, ValueError):  # no signature to read: assume none
        return False


def make_target(ref: str, registry: Registry[TargetFactory] | None = None) -> Target:
    """The target `NAME` or `NAME@VERSION`; a UsageError naming the known ones otherwise."""
    registry = registry or REGISTRY
    name, version = split_target(ref)
    factory = registry.get(name)
    source = registry.source(name)
    if version is not None and not _takes_version(factory):
        raise UsageError(f"target {name!r} has no versions to choose from: drop @{version}")
    target = factory() if version is None else factory(version=version)
    if source != BUILT_IN:
        plugin = registry.plugins()[name]
        missing = missing_members(target)
        if missing:
            raise plugin.refuse(f"makes no Target (lab.api.Target): it lacks {', '.join(missing)}")
        if target.name != name:
            raise plugin.refuse(f"its target is called {target.name!r}: name the entry point so")
    return target


def target_names() -> tuple[str, ...]:
    return REGISTRY.names()


def target_source(name: str) -> str:
    return REGISTRY.source(name)
