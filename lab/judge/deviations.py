"""Known deviations: where a real target does something other than the documents predict,
declared as data (one TOML file per target, in the target's folder), and recognised in a run.

    load_declarations(path) → Declarations          a target's file, checked (InputError)
    Observation.gather(verdict, check, metrics, events, folder, needles) → Observation
    assess(declared, observation, source, backend) → DeviationOutcome | None

A declaration names its scenario (and, optionally, the backends, modes, target versions
(`versions = ["9.2.1"]`; a run at another version is not matched by it) and target settings
(`settings = { activation = "quorum-voting" }`; defaults: the target's) it was seen with),
what the documents predict, what was observed, the evidence and the command that shows it,
what the target's own documentation says of the situation (`documented`: its document and
section; RabbitMQ's guides predict losses the Qpid documents do not),
how often suite sessions saw it (`seen`, lab.judge.seen_rates), and a matcher over the
run's judgement, a small vocabulary:

    verdicts        the prediction's outcomes it applies to (default: broken)
    violations      violation kinds that must all be present
    allow           further kinds the run may show; any kind outside violations + allow
                    means the run is not this deviation (a loss is never masked by it)
    check           the checker's counts: lost = "0", lost = ">0", duplicated = "<=5" …
    longest_gap_s   the longest gap between acknowledged sends in the load: ">=3"
    codes_seen      operational-log codes some node wrote (broker.log events)
    codes_absent    codes no node wrote
    log_contains    text some node's log holds (nodes/<n>/broker.log or stderr.log)

The outcomes (`DeviationOutcome.status`) of a run with declarations for it:

    reproduced      the prediction did not hold, and a declaration matched: verdict `deviation`
    not seen        the prediction held although a deviation is declared: fixed upstream?
                    (loud), or as before (quiet) when every declaration's latest `seen`
                    rate on the run's backend says earlier sessions had held runs too
    unmatched       the prediction did not hold, and no declaration matched (each says why)"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeAlias

from lab.ground.errors import InputError
from lab.ground.files import read_user_document
from lab.ground.paths import LAB_ROOT
from lab.judge.run_observation import COUNTS, Observation
from lab.judge.seen_rates import SeenRate, latest_seen, parse_seen

__all__ = [
    "NOT_SEEN_AS_BEFORE",
    "NOT_SEEN_WARNING",
    "Condition",
    "Declarations",
    "Deviation",
    "DeviationNotSeen",
    "DeviationOutcome",
    "Matcher",
    "assess",
    "load_declarations",
    "parse_declarations",
]

NOT_SEEN_WARNING = "declared deviation not seen: fixed upstream?"
NOT_SEEN_AS_BEFORE = "declared deviation not seen, as in earlier sessions"
VERDICTS = ("broken", "unknown")
_CONDITION = re.compile(r"^\s*(=|==|!=|>=|<=|>|<)?\s*(\d+(?:\.\d+)?)\s*$")

Status = Literal["reproduced", "not seen", "unmatched"]
Settings: TypeAlias = Mapping[str, str] | None  # a run's target settings, with the defaults


class DeviationNotSeen(UserWarning):
    """A run held although its target declares a deviation for it: fixed upstream?"""


@dataclass(frozen=True)
class Condition:
    """A comparison with a number, written `"0"`, `">0"`, `">=3.5"`, `"<10"`, `"!=0"`."""

    op: str
    value: float

    @staticmethod
    def parse(text: object) -> Condition:
        if isinstance(text, bool) or not isinstance(text, str | int | float):
            raise ValueError(f'{text!r} is not a condition (e.g. "0", ">0", ">=3")')
        found = _CONDITION.match(str(text))
        if found is None:
            raise ValueError(f'{text!r} is not a condition (e.g. "0", ">0", ">=3")')
        op = found.group(1) or "="
        return Condition("=" if op == "==" else op, float(found.group(2)))

    def holds(self, x: float) -> bool:
        v = self.value
        return {
            "=": x == v,
            "!=": x != v,
            ">": x > v,
            ">=": x >= v,
            "<": x < v,
            "<=": x <= v,
        }[self.op]

    def __str__(self) -> str:
        return f"{'' if self.op == '=' else self.op}{self.value:g}"


@dataclass(frozen=True)
class Matcher:
    """How a deviation shows in a run (the module's docstring lists the vocabulary)."""

    verdicts: tuple[str, ...] = ("broken",)
    violations: tuple[str, ...] = ()
    allow: tuple[str, ...] = ()
    check: tuple[tuple[str, Condition], ...] = ()
    longest_gap_s: Condition | None = None
    codes_seen: tuple[str, ...] = ()
    codes_absent: tuple[str, ...] = ()
    log_contains: tuple[str, ...] = ()

    def mismatches(self, seen: Observation) -> tuple[str, ...]:
        """Why the run is not this deviation, one reason each; empty when it is."""
        why: list[str] = []
        if seen.outcome not in self.verdicts:
            why.append(f"verdict {seen.outcome}, not {' or '.join(self.verdicts)}")
        missing = [k for k in self.violations if k not in seen.violations]
        if missing:
            why.append(f"no {', '.join(missing)} violation")
        extra = [k for k in seen.violations if k not in (*self.violations, *self.allow)]
        if extra:
            why.append(f"undeclared violation {', '.join(extra)}")
        for name, condition in self.check:
            count = seen.counts.get(name, 0)
            if not condition.holds(count):
                why.append(f"{name} {count}, declared {condition}")
        gap = self.longest_gap_s
        if gap is not None and not gap.holds(seen.longest_gap_s):
            why.append(f"longest gap {seen.longest_gap_s:.2f} s, declared {gap}")
        why.extend(f"no {c} in the logs" for c in self.codes_seen if c not in seen.codes)
        why.extend(f"{c} was logged" for c in self.codes_absent if c in seen.codes)
        why.extend(f"no log line with {t!r}" for t in self.log_contains if t not in seen.log_found)
        return tuple(why)


@dataclass(frozen=True)
class Deviation:
    """One declared deviation of a target, for one scenario."""

    id: str
    scenario: str
    predicted: str
    observed: str
    evidence: str
    command: str
    match: Matcher
    backends: tuple[str, ...] = ()  # empty: every backend
    modes: tuple[str, ...] = ()  # empty: every mode
    seen: tuple[SeenRate, ...] = ()  # its rates in suite sessions, per backend
    settings: tuple[tuple[str, str], ...] = ()  # the target's settings it applies to
    versions: tuple[str, ...] = ()  # the target's versions it was seen on; empty: every one
    # What the target's own documentation says of the situation, with its document and
    # section: the target's prediction, beside the Qpid documents' (empty: none given).
    documented: str = ""

    def applies_to(
        self,
        scenario: str,
        backend: str,
        mode: str,
        given: Settings = None,
        version: str | None = None,
    ) -> bool:
        return (
            self.scenario == scenario
            and (not self.backends or backend in self.backends)
            and (not self.modes or mode in self.modes)
            and all((given or {}).get(k) == v for k, v in self.settings)
            and (not self.versions or version in self.versions)
        )


@dataclass(frozen=True)
class Declarations:
    """A target's file of declared deviations."""

    target: str
    source: str
    deviations: tuple[Deviation, ...] = ()

    def for_run(
        self,
        scenario: str,
        backend: str,
        mode: str,
        given: Settings = None,
        version: str | None = None,
    ) -> tuple[Deviation, ...]:
        """`given`: the run's target settings, with the target's defaults; `version`: the
        version the target ran."""
        return tuple(
            d for d in self.deviations if d.applies_to(scenario, backend, mode, given, version)
        )

    def needles(self) -> tuple[str, ...]:
        """Every text some declaration looks for in the nodes' logs."""
        return tuple(sorted({t for d in self.deviations for t in d.match.log_contains}))


@dataclass(frozen=True)
class DeviationOutcome:
    """What the declarations make of a run (see the module's docstring)."""

    status: Status
    source: str
    declared: tuple[Deviation, ...]
    matched: Deviation | None = None
    mismatches: tuple[tuple[str, tuple[str, ...]], ...] = ()
    before: tuple[tuple[str, SeenRate], ...] = ()  # not seen: each declaration's last rate

    @property
    def reproduced(self) -> bool:
        return self.status == "reproduced"

    @property
    def loud(self) -> bool:
        """Not seen, where every earlier session on this backend had seen it (or none said):
        the question "fixed upstream?" is worth asking."""
        if self.status != "not seen":
            return False
        rated = dict(self.before)
        return any(
            d.id not in rated or rated[d.id].times == rated[d.id].runs for d in self.declared
        )

    def line(self) -> str:
        """One line for a summary."""
        ids = ", ".join(d.id for d in self.declared)
        if self.matched is not None:
            return f"deviation reproduced: {self.matched.id} (declared in {self.source})"
        if self.status == "not seen" and self.loud:
            return f"{NOT_SEEN_WARNING} ({ids}, declared in {self.source})"
        if self.status == "not seen":
            rates = ", ".join(
                f"{i} {r.times}/{r.runs} on {r.backend} ({r.date.isoformat()})"
                for i, r in self.before
            )
            return f"{NOT_SEEN_AS_BEFORE} ({rates}; declared in {self.source})"
        why = "; ".join(f"{i}: {', '.join(r)}" for i, r in self.mismatches)
        return f"not the declared deviation ({why})"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "outcome": self.status,
            "declared": [d.id for d in self.declared],
            "source": self.source,
        }
        if self.matched is not None:
            m = self.matched
            out.update(id=m.id, predicted=m.predicted, observed=m.observed, command=m.command)
            if m.documented:
                out["documented"] = m.documented
        if self.status == "not seen":
            out["warning"] = NOT_SEEN_WARNING if self.loud else NOT_SEEN_AS_BEFORE
        if self.before:
            out["seen_before"] = {i: f"{r.times}/{r.runs}" for i, r in self.before}
        if self.mismatches:
            out["mismatches"] = {i: list(r) for i, r in self.mismatches}
        return out


def assess(
    declared: tuple[Deviation, ...], seen: Observation, source: str, backend: str | None = None
) -> DeviationOutcome | None:
    """The deviation outcome of a run with `declared` deviations; None when none is declared.
    The first declaration that matches wins. A held run on `backend` carries each
    declaration's latest `seen` rate there (what makes it loud or quiet)."""
    if not declared:
        return None
    if seen.outcome == "held":
        rates = ((d.id, latest_seen(d.seen, backend)) for d in declared if backend is not None)
        before = tuple((i, r) for i, r in rates if r is not None)
        return DeviationOutcome("not seen", source, declared, before=before)
    reasons: list[tuple[str, tuple[str, ...]]] = []
    for deviation in declared:
        why = deviation.match.mismatches(seen)
        if not why:
            return DeviationOutcome("reproduced", source, declared, deviation)
        reasons.append((deviation.id, why))
    return DeviationOutcome("unmatched", source, declared, mismatches=tuple(reasons))


# ---- the file --------------------------------------------------------------------------------

_TOP = {"target", "deviation"}
_FIELDS = {"id", "scenario", "predicted", "observed", "evidence", "command"}
_FIELDS |= {"backends", "modes", "seen", "settings", "versions", "documented"}
_REQUIRED = ("id", "scenario", "predicted", "observed", "evidence", "command")
_MATCH = {"verdicts", "violations", "allow", "check", "longest_gap_s"} | {
    "codes_seen",
    "codes_absent",
    "log_contains",
}


def _strings(raw: Any, what: str) -> tuple[str, ...]:
    if not isinstance(raw, list) or not all(isinstance(s, str) for s in raw):
        raise ValueError(f"{what} must be a list of strings")
    return tuple(raw)


def _unknown(raw: Mapping[str, Any], known: set[str], where: str) -> None:
    extra = sorted(set(raw) - known)
    if extra:
        raise ValueError(f"{where}: unknown key {extra[0]!r} (known: {', '.join(sorted(known))})")


def _matcher(raw: Any, where: str) -> Matcher:
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: a [deviation.match] table is required")
    _unknown(raw, _MATCH, f"{where}.match")
    verdicts = _strings(raw.get("verdicts", ["broken"]), f"{where}.match.verdicts")
    bad = [v for v in verdicts if v not in VERDICTS]
    if bad or not verdicts:
        raise ValueError(f"{where}.match.verdicts: {bad or '[]'} (known: {', '.join(VERDICTS)})")
    check = raw.get("check", {})
    if not isinstance(check, dict):
        raise ValueError(f"{where}.match.check must be a table of counts")
    _unknown(check, set(COUNTS), f"{where}.match.check")
    gap = raw.get("longest_gap_s")
    return Matcher(
        verdicts=verdicts,
        violations=_strings(raw.get("violations", []), f"{where}.match.violations"),
        allow=_strings(raw.get("allow", []), f"{where}.match.allow"),
        check=tuple((name, Condition.parse(c)) for name, c in sorted(check.items())),
        longest_gap_s=None if gap is None else Condition.parse(gap),
        codes_seen=_strings(raw.get("codes_seen", []), f"{where}.match.codes_seen"),
        codes_absent=_strings(raw.get("codes_absent", []), f"{where}.match.codes_absent"),
        log_contains=_strings(raw.get("log_contains", []), f"{where}.match.log_contains"),
    )


def _deviation(raw: Any, where: str) -> Deviation:
    if not isinstance(raw, dict):
        raise ValueError(f"{where} must be a table")
    _unknown(raw, _FIELDS | {"match"}, where)
    for key in _REQUIRED:
        if not isinstance(raw.get(key), str) or not raw[key].strip():
            raise ValueError(f"{where}: {key!r} must be a non-empty string")
    return Deviation(
        id=raw["id"],
        scenario=raw["scenario"],
        predicted=" ".join(raw["predicted"].split()),
        observed=" ".join(raw["observed"].split()),
        evidence=" ".join(raw["evidence"].split()),
        command=raw["command"].strip(),
        match=_matcher(raw.get("match"), f"{where} ({raw['id']})"),
        backends=_strings(raw.get("backends", []), f"{where}.backends"),
        modes=_strings(raw.get("modes", []), f"{where}.modes"),
        seen=parse_seen(raw.get("seen", []), where),
        settings=_settings(raw.get("settings", {}), f"{where}.settings"),
        versions=_strings(raw.get("versions", []), f"{where}.versions"),
        documented=" ".join(str(raw.get("documented", "")).split()),
    )


def _settings(raw: Any, where: str) -> tuple[tuple[str, str], ...]:
    if isinstance(raw, dict) and all(isinstance(v, str) for v in raw.values()):
        return tuple(sorted(raw.items()))
    raise ValueError(f"{where} must be a table of strings")


def parse_declarations(raw: Mapping[str, Any], source: str) -> Declarations:
    """A target's declarations from its file's parsed TOML (ValueError naming the key)."""
    _unknown(raw, _TOP, "file")
    target = raw.get("target")
    if not isinstance(target, str) or not target:
        raise ValueError("'target' must name the target")
    entries = raw.get("deviation", [])
    if not isinstance(entries, list):
        raise ValueError("declare each deviation as a [[deviation]] table")
    found = tuple(_deviation(e, f"deviation {i + 1}") for i, e in enumerate(entries))
    ids = [d.id for d in found]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise ValueError(f"deviation id {twice[0]!r} is declared twice")
    return Declarations(target, source, found)


def load_declarations(path: Path) -> Declarations:
    """The declarations in `path` (TOML); an InputError naming the file and what is wrong."""
    shown = path.relative_to(LAB_ROOT) if path.is_relative_to(LAB_ROOT) else path
    raw = read_user_document(path, "deviations file", kind="toml")
    try:
        return parse_declarations(raw, str(shown))
    except ValueError as exc:
        raise InputError(f"{path}: {exc}") from None
