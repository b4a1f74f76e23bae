"""The bug zoo: planted bugs as data, one file each in `zoo/`, never in the product's code.

A bug is what a mutation tool applies to a scratch copy of the tree (lab.bench.scratch):
exact text replacements, each `old` found exactly once in its file. Its file says what it
breaks and which claim of the Qpid HA documents it violates, and `zoo/incidents/NAME.toml`
is a fixed schedule (`lab run --spec`) under which the mutated tree shows it.

    name = "ack-quorum-off-by-one"          # the file's own name, without .toml
    design = "replicated-group"             # or "active-passive": the HA design it lives in
    breaks = "…"                            # what goes wrong, one or two sentences
    claim = "…"                             # the document's claim it violates, in our words
    document = "…"                          # which document and section
    expect = ["lost"]                       # violation kinds its incident shows (any of them)
    cheap = true                            # its incident runs in the default test suite
    [[replace]]
    file = "broker_ref/self_elected.py"     # relative to the tree
    old = '''…'''                           # exactly once in the file
    new = '''…'''
    [[canary]]                              # applied after the bug's replacements, alike;
    file = "broker_ref/self_elected.py"     # its `new` calls zoo_canary.reached(…) where the
    old = '''…'''                           # buggy code runs and zoo_canary.triggered(…)
    new = '''…'''                           # where it does what the correct code would not

    bugs = load_zoo()                        # every bug, by name order; InputError names
                                             # the file and the field of the first problem
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab.ground.cluster_settings import MODES
from lab.ground.errors import InputError, UsageError
from lab.ground.files import read_user_document
from lab.ground.paths import LAB_ROOT

__all__ = ["CANARY_MODULE", "ZOO_DIR", "Bug", "Replacement", "bugs_named", "load_bug", "load_zoo"]

ZOO_DIR = LAB_ROOT / "zoo"
_FIELDS = frozenset(
    {"name", "design", "breaks", "claim", "document", "expect", "cheap", "replace", "canary"}
)
CANARY_MODULE = ZOO_DIR / "canary.py"  # written into each scratch copy as zoo_canary.py
_TEXTS = ("breaks", "claim", "document")


@dataclass(frozen=True)
class Replacement:
    file: str  # relative to the tree, e.g. broker_ref/election.py
    old: str
    new: str


@dataclass(frozen=True)
class Bug:
    name: str
    design: str
    breaks: str
    claim: str
    document: str
    expect: tuple[str, ...]
    cheap: bool
    replacements: tuple[Replacement, ...]
    source: Path  # the bug's file
    # Applied after `replacements`: the calls of zoo_canary that say when the bug's code was
    # reached and when it triggered (zoo/canary.py); never part of the bug itself.
    canaries: tuple[Replacement, ...] = ()

    @property
    def incident(self) -> Path:
        """Its fixed schedule: zoo/incidents/NAME.toml beside its file."""
        return self.source.parent / "incidents" / f"{self.name}.toml"


def _text(raw: Mapping[str, Any], key: str, where: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{where}: '{key}' must be a non-empty text")
    return value


def _replacement(raw: object, where: str) -> Replacement:
    if not isinstance(raw, Mapping):
        raise InputError(f"{where}: must be a table with file, old and new")
    unknown = sorted(set(raw) - {"file", "old", "new"})
    if unknown:
        raise InputError(f"{where}.{unknown[0]}: unknown field (known: file, new, old)")
    file = _text(raw, "file", where)
    if Path(file).is_absolute() or ".." in Path(file).parts:
        raise InputError(f"{where}.file: {file!r} must be a path inside the tree")
    old = _text(raw, "old", where)
    new = raw.get("new")
    if not isinstance(new, str):
        raise InputError(f"{where}: 'new' must be a text (it may be empty)")
    if new == old:
        raise InputError(f"{where}: 'new' is the same as 'old': nothing would change")
    return Replacement(file, old, new)


def parse_bug(raw: Mapping[str, Any], source: Path) -> Bug:
    """A bug from its parsed file; InputError naming the file and the field."""
    where = str(source)
    unknown = sorted(set(raw) - _FIELDS)
    if unknown:
        known = ", ".join(sorted(_FIELDS))
        raise InputError(f"{where}: '{unknown[0]}': unknown field (known: {known})")
    name = _text(raw, "name", where)
    if name != source.stem:
        raise InputError(f"{where}: 'name' is {name!r}, but the file is named {source.stem!r}")
    design = _text(raw, "design", where)
    if design not in MODES:
        raise InputError(f"{where}: 'design' must be one of {', '.join(MODES)}, not {design!r}")
    texts = {key: _text(raw, key, where) for key in _TEXTS}
    expect = raw.get("expect")
    if not isinstance(expect, list) or not expect or not all(isinstance(k, str) for k in expect):
        raise InputError(f"{where}: 'expect' must list the violation kinds its incident shows")
    cheap = raw.get("cheap", False)
    if not isinstance(cheap, bool):
        raise InputError(f"{where}: 'cheap' must be true or false, not {cheap!r}")
    entries = raw.get("replace")
    if not isinstance(entries, list) or not entries:
        raise InputError(f"{where}: give at least one [[replace]] table")
    replacements = tuple(
        _replacement(e, f"{where}: replace {i}") for i, e in enumerate(entries, start=1)
    )
    canary_entries = raw.get("canary", [])
    if not isinstance(canary_entries, list):
        raise InputError(f"{where}: 'canary' must be [[canary]] tables with file, old and new")
    canaries = tuple(
        _replacement(e, f"{where}: canary {i}") for i, e in enumerate(canary_entries, start=1)
    )
    return Bug(
        name=name,
        design=design,
        expect=tuple(expect),
        cheap=cheap,
        replacements=replacements,
        source=source,
        canaries=canaries,
        **texts,
    )


def load_bug(path: Path) -> Bug:
    """The bug in `path`; InputError (one line naming the file) when it cannot be read, is not
    TOML, or a field is wrong."""
    bug = parse_bug(read_user_document(path, "bug file", kind="toml"), path)
    if not bug.incident.is_file():
        raise InputError(f"{path}: its incident {bug.incident} is missing")
    return bug


def load_zoo(root: Path = ZOO_DIR) -> tuple[Bug, ...]:
    """Every bug in `root` (one *.toml each), in name order."""
    paths = sorted(root.glob("*.toml"))
    if not paths:
        raise InputError(f"{root}: no bug files (*.toml) in the zoo")
    return tuple(load_bug(p) for p in paths)


def bugs_named(bugs: tuple[Bug, ...], names: tuple[str, ...]) -> tuple[Bug, ...]:
    """The bugs named (all of them for none), in the zoo's order; UsageError for a name
    the zoo does not hold."""
    if not names:
        return bugs
    known = {b.name for b in bugs}
    for name in names:
        if name not in known:
            raise UsageError(
                f"no bug {name!r} in the zoo (see `lab bench detection --list`; known: "
                f"{', '.join(sorted(known))})"
            )
    return tuple(b for b in bugs if b.name in names)
