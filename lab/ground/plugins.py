"""Parts added to the lab from outside it: Python entry points of installed packages.

    [project.entry-points."lab.scenarios"]      (a user's pyproject.toml)
    my-scenario = "my_package.scenarios:MY_SCENARIO"

    found = installed(SCENARIO_GROUP)     every entry point of the group, as Plugin values
    found[0].load()                       the object it names (PluginError: one line)
    found[0].source                       where it comes from, for `lab list`
    Registry(group, built_ins, check, unknown)   the lab's own by name, then entry points'

The registries built on it (scenarios.catalog, lab.targets.catalog) say what a loaded
object must be; entry points are looked up when a name is asked for, never at import.
"""

from __future__ import annotations

import importlib.metadata
import itertools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from lab.ground.errors import PluginError, UsageError

__all__ = ["BUILT_IN", "SCENARIO_GROUP", "TARGET_GROUP", "Plugin", "Registry", "installed"]

SCENARIO_GROUP = "lab.scenarios"
"""The entry point group of scenarios: each entry point names a `Scenario` (or a function of
no arguments that returns one), under the scenario's name."""
TARGET_GROUP = "lab.targets"
"""The entry point group of targets: each names a target's class or factory, called with no
argument (its default version) or with `version=`."""
BUILT_IN = "built-in"  # the source of the lab's own scenarios and targets

T = TypeVar("T")


@dataclass(frozen=True)
class Plugin:
    """One entry point: its name, the `module:attribute` it names, the distribution that
    declares it (None for one made by hand, as tests do), and how to load it."""

    name: str
    value: str
    group: str
    distribution: str | None = None
    loader: Callable[[], object] = field(default=lambda: None, compare=False, repr=False)

    @property
    def source(self) -> str:
        """Where it comes from, in a few words: `entry point of my-pkg 1.0 (my_pkg.x:Y)`."""
        made_by = f" of {self.distribution}" if self.distribution else ""
        return f"entry point{made_by} ({self.value})"

    def load(self) -> object:
        """The object the entry point names; a PluginError naming the entry point when its
        module cannot be imported or lacks the attribute."""
        try:
            return self.loader()
        except Exception as exc:
            detail = " ".join(f"{type(exc).__name__}: {exc}".split())
            message = f"{self.group} entry point {self.name!r} {self.source}: {detail}"
            raise PluginError(message) from exc

    def refuse(self, why: str) -> PluginError:
        """The error for an entry point whose object is not what its group needs."""
        return PluginError(f"{self.group} entry point {self.name!r} {self.source}: {why}")


def _plugin(point: importlib.metadata.EntryPoint, group: str) -> Plugin:
    dist = getattr(point, "dist", None)
    made_by = None if dist is None else f"{dist.name} {dist.version}"
    return Plugin(point.name, point.value, group, made_by, point.load)


def installed(
    group: str, points: Iterable[importlib.metadata.EntryPoint] | None = None
) -> tuple[Plugin, ...]:
    """The entry points of `group` in the installed packages (or `points`, given), by name;
    a name declared twice is a PluginError naming both."""
    found = importlib.metadata.entry_points(group=group) if points is None else points
    plugins = sorted((_plugin(p, group) for p in found), key=lambda p: (p.name, p.value))
    for first, second in itertools.pairwise(plugins):
        if first.name == second.name and first.value != second.value:
            raise PluginError(
                f"{group} entry point {first.name!r} is declared twice: "
                f"{first.source} and {second.source}"
            )
    return tuple({p.name: p for p in plugins}.values())


class Registry(Generic[T]):
    """Named things of one kind: the lab's own (built-ins, in their order), then those of
    installed packages' entry points (by name). An entry point is loaded only when its name
    is asked for (or the whole list is), so one broken package never stops the others.

    `check(plugin, loaded)` turns what an entry point names into a T, or raises
    `plugin.refuse(why)`; `unknown(name, known)` is the one-line message for a name that is
    neither (a UsageError)."""

    def __init__(
        self,
        group: str,
        built_ins: Callable[[], Mapping[str, T]],
        check: Callable[[Plugin, object], T],
        unknown: Callable[[str, tuple[str, ...]], str],
        plugins: Callable[[], tuple[Plugin, ...]] | None = None,
    ) -> None:
        self.group = group
        self._built_ins = built_ins
        self._check = check
        self._unknown = unknown
        self._plugins = plugins or (lambda: installed(group))
        self._loaded: dict[str, T] = {}
        self._found: dict[str, Plugin] | None = None

    def plugins(self) -> dict[str, Plugin]:
        """The group's entry points by name (looked up once); one that takes the name of a
        built-in is a PluginError."""
        if self._found is None:
            found = {p.name: p for p in self._plugins()}
            for name in sorted(found.keys() & self._built_ins().keys()):
                raise found[name].refuse(f"{name!r} is the name of one of the lab's own")
            self._found = found
        return self._found

    def names(self) -> tuple[str, ...]:
        """Every name: the built-ins in their order, then the entry points'."""
        return (*self._built_ins(), *sorted(self.plugins()))

    def source(self, name: str) -> str:
        """`built-in`, or the entry point and its distribution."""
        if name in self._built_ins():
            return BUILT_IN
        found = self.plugins().get(name)
        if found is None:
            raise UsageError(self._unknown(name, self.names()))
        return found.source

    def get(self, name: str) -> T:
        """The thing called `name`: a built-in, or an entry point's (loaded once)."""
        built_ins = self._built_ins()
        if name in built_ins:
            return built_ins[name]
        if name not in self._loaded:
            found = self.plugins().get(name)
            if found is None:
                raise UsageError(self._unknown(name, self.names()))
            self._loaded[name] = self._check(found, found.load())
        return self._loaded[name]

    def items(self) -> list[tuple[str, T, str]]:
        """(name, thing, source) for every name, each entry point loaded."""
        return [(name, self.get(name), self.source(name)) for name in self.names()]
