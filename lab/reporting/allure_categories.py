"""Allure's categories for the lab: one per violation kind, so a night's failures are sorted
by what went wrong (`lost`, `two-masters`, `unavailable>bound` …) rather than lumped into
"Product defects".

    violation_kinds()               every kind the judge can name, read from lab/judge's code
    categories()                    the categories.json entries, one per kind
    write_categories(results_dir)   RESULTS/categories.json (Allure reads it when generating)
    categories_of(status, message)  the categories Allure puts such a result in
    label_deviation(outcome)        tags the running test with a declared deviation's outcome

A run that shows a deviation its target declares (lab.judge.deviations) ends its test as an
expected failure whose message starts `deviation reproduced: <id>`: Allure's status
skipped, in the category "deviation reproduced" (its kinds are not written as a
`violations: ` list, so known deviations stay out of the violation categories). A declared
deviation a held run did not show is a tag, "declared deviation not seen", and, with
`--lab-strict-deviations`, a failure in the category of that name.

A failing test names its kinds in its message as a list after `violations: `, items
separated by `, `, the list ended by a newline, `)`, `;` or the end of the message:

    single-node-crash seed=7: prediction broken — … (2 acknowledged message(s) lost)
    violations: lost, two-masters
    random/broker_ref/process seed=3: broken (violations: lost); run folder …

Allure matches a category's `messageRegex` against the whole message (Java's
`Pattern.DOTALL` and `matches()`); `categories_of` applies the same rule, so the unit tests
say what the report will show. Kinds are read from the judge's source rather than listed
here, so a kind added there gets its category without a change here:

- a class attribute `violation = "…"` (each expectation's kind), and the kind of a class
  with an `unmet` method and no such attribute (its name in lower case with dashes, as
  lab.judge.prediction.violation_kind says);
- in lab/judge/prediction.py, the (kind, reason) pairs a verdict is made of, the kind a
  string or a module constant (`NOT_DRAINED` …);
- a `violations=(…)` keyword of string constants (the `error` of a run that broke off).
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lab.judge
from lab.judge.deviations import DeviationOutcome

__all__ = [
    "CATEGORY_STATUSES",
    "Category",
    "categories",
    "categories_of",
    "deviation_categories",
    "label_deviation",
    "violation_kinds",
    "violations_text",
    "write_categories",
]

# failed: a prediction that did not hold; broken: an error in the test; skipped: allure-pytest's
# status of an xfail, a known failure that still fails (its message names the kinds too).
CATEGORY_STATUSES = ("failed", "broken", "skipped")
_KIND = re.compile(r"[a-z][a-z>-]*[a-z]")
_PAIRS_MODULE = "prediction.py"
_VIOLATIONS = "violations: "
DEVIATION_REPRODUCED = "deviation reproduced"
DEVIATION_NOT_SEEN = "declared deviation not seen"


def violations_text(kinds: tuple[str, ...] | list[str]) -> str:
    """How a failure message names its kinds: `violations: lost, two-masters`."""
    return _VIOLATIONS + ", ".join(kinds)


def _constants(tree: ast.Module) -> dict[str, str]:
    """Module-level names bound to a string constant."""
    found: dict[str, str] = {}
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            found[node.targets[0].id] = node.value.value
    return found


def _string(node: ast.expr, constants: dict[str, str]) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return constants.get(node.id)
    return None


def _dashed(name: str) -> str:
    return "".join(f"-{c.lower()}" if c.isupper() and i else c.lower() for i, c in enumerate(name))


def _class_kind(node: ast.ClassDef) -> str | None:
    """A class's `violation` attribute; else, for an expectation (an `unmet` method, not the
    Protocol itself), its name dashed."""
    for statement in node.body:
        target: ast.expr | None = None
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target = statement.targets[0]
        elif isinstance(statement, ast.AnnAssign):
            target = statement.target
        value = getattr(statement, "value", None)
        if (
            isinstance(target, ast.Name)
            and target.id == "violation"
            and isinstance(value, ast.Constant)
            and isinstance(value.value, str)
        ):
            return value.value
    is_protocol = any(isinstance(b, ast.Name) and b.id == "Protocol" for b in node.bases)
    has_unmet = any(isinstance(s, ast.FunctionDef) and s.name == "unmet" for s in node.body)
    return _dashed(node.name) if has_unmet and not is_protocol else None


def _kinds_in(tree: ast.Module, pairs: bool) -> set[str]:
    constants = _constants(tree)
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            kind = _class_kind(node)
            if kind is not None:
                found.add(kind)
        elif pairs and isinstance(node, ast.Tuple) and len(node.elts) == 2:
            kind = _string(node.elts[0], constants)
            if kind is not None:
                found.add(kind)
        elif (
            isinstance(node, ast.keyword)
            and node.arg == "violations"
            and isinstance(node.value, ast.Tuple)
        ):
            found.update(
                s for s in (_string(e, constants) for e in node.value.elts) if s is not None
            )
    return {k for k in found if _KIND.fullmatch(k)}


def violation_kinds(judge_dir: Path | None = None) -> tuple[str, ...]:
    """Every violation kind lab/judge's code can put in a result.json, sorted."""
    folder = judge_dir or Path(lab.judge.__file__).parent
    found: set[str] = set()
    for path in sorted(folder.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        found |= _kinds_in(tree, pairs=path.name == _PAIRS_MODULE)
    return tuple(sorted(found))


@dataclass(frozen=True)
class Category:
    """One of Allure's categories: a name, the statuses it takes, its message pattern."""

    name: str
    message_regex: str
    statuses: tuple[str, ...] = CATEGORY_STATUSES

    @staticmethod
    def of_kind(kind: str) -> Category:
        if not _KIND.fullmatch(kind):
            raise ValueError(f"not a violation kind: {kind!r}")
        # `violations: ` then maybe earlier kinds (each ended by `, `), then this kind, then
        # the end of the list. A kind holds no character that is special in a pattern.
        regex = rf".*\b{_VIOLATIONS}(?:[^\n;)]*, )?{kind}(?:[,;)\n].*)?"
        return Category(kind, regex)

    def matches(self, status: str, message: str | None) -> bool:
        """Allure's rule: the status is one of ours and the whole message matches."""
        return (
            status in self.statuses
            and message is not None
            and re.fullmatch(self.message_regex, message, re.DOTALL) is not None
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "matchedStatuses": list(self.statuses),
            "messageRegex": self.message_regex,
        }


def categories() -> tuple[Category, ...]:
    return tuple(Category.of_kind(kind) for kind in violation_kinds())


def deviation_categories() -> tuple[Category, ...]:
    """A declared deviation reproduced (an xfail: skipped), and one not seen (a failure with
    --lab-strict-deviations)."""
    return (
        Category(DEVIATION_REPRODUCED, rf".*\b{DEVIATION_REPRODUCED}: .*", ("skipped",)),
        Category(DEVIATION_NOT_SEEN, rf".*\b{DEVIATION_NOT_SEEN}: .*", ("failed",)),
    )


def categories_of(status: str, message: str | None) -> tuple[str, ...]:
    """The names of the lab's categories a result with this status and message falls in."""
    every = (*deviation_categories(), *categories())
    return tuple(c.name for c in every if c.matches(status, message))


def label_deviation(outcome: DeviationOutcome) -> None:
    """Tag the test allure-pytest is running with the deviation's outcome and ids."""
    import allure

    if outcome.matched is not None:
        allure.dynamic.tag(DEVIATION_REPRODUCED)
        allure.dynamic.label("deviation", outcome.matched.id)
    else:
        allure.dynamic.tag(DEVIATION_NOT_SEEN)
        allure.dynamic.label("deviation", ", ".join(d.id for d in outcome.declared))


def write_categories(results_dir: Path) -> Path:
    """RESULTS_DIR/categories.json, replacing any there."""
    path = results_dir / "categories.json"
    every = (*deviation_categories(), *categories())
    text = json.dumps([c.to_json() for c in every], indent=2) + "\n"
    path.write_text(text, encoding="utf-8")
    return path
