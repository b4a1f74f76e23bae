"""Every path the project names exists in it, and nothing points outside it.

The README, the manual (docs/**/*.md), mkdocs.yml, the deviation declarations, the scripts
and workflows, and the docstrings and comments of every Python module are searched for
repository paths (`lab/run/folder.py`, `docs/run-folder.md`, `tests/test_docker_*.py`,
`scripts/bootstrap.sh` …) and for dotted names of the lab's modules with at least three
parts (`lab.judge.deviations`, `lab.pytest_plugin.skip_unless_ci`); each must exist. Paths
with a placeholder (`<node>`, `…`, `{name}`) are patterns, not paths, and are skipped.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

from docs_helpers import ROOT

TOP = (
    "lab", "broker_ref", "clients", "faults", "scenarios", "spark_reports", "tests",
    "scripts", "incidents", "containers", "docs", ".github", ".ci", "examples",
)  # fmt: skip
TOP_FILES = ("README.md", "mkdocs.yml", "pyproject.toml", "docker-compose.yml")
PACKAGES = ("lab", "broker_ref", "clients", "faults", "scenarios", "spark_reports")

_PATH = re.compile(
    r"(?<![\w./-])((?:" + "|".join(re.escape(t) for t in TOP) + r")/[\w./*-]*+(?![<{$…])"
    r"|(?:" + "|".join(re.escape(f) for f in TOP_FILES) + r")(?![\w-]))"
)
_DOTTED = re.compile(
    r"(?<![\w./-])((?:" + "|".join(PACKAGES) + r")(?:\.[A-Za-z_]\w*){2,})(?![\w/-])"
)
_PLACEHOLDER = re.compile(r"[<>{}$…]|\.\.\.")
# Files outside the repository that the project must never name (split so that this
# file does not name them itself).
_OUTSIDE = re.compile(
    r"\.\./" + "shared|shared/" + r"(?:design|seeds)|(?<![\w/])" + "seeds/"
    r"|java-broker-ha-" + r"[\w.-]+\.(?:md|txt)|cpp-broker-" + r"active-passive-ha\.md"
)
# The design notes the manual replaced, named bare (the manual's own pages are docs/…).
_BARE_NOTES = re.compile(r"(?<![\w/-])(?:formats|scenarios)\.md")


def _sources() -> Iterator[Path]:
    yield ROOT / "README.md"
    yield ROOT / "mkdocs.yml"
    yield from sorted((ROOT / "docs").rglob("*.md"))
    for folder in (*PACKAGES, "tests", "scripts", "incidents", ".github", ".ci", "examples"):
        for path in sorted((ROOT / folder).rglob("*")):
            if path.is_file() and (path.suffix in (".py", ".toml", ".sh", ".yml") or
                                   path.parent.name == ".ci"):  # fmt: skip
                yield path


def _python_prose(text: str) -> str:
    """The comments and docstrings of a module: where it speaks about itself."""
    parts: list[str] = []
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.COMMENT:
            parts.append(token.string)
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                parts.append(doc)
    return "\n".join(parts)


def prose(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    return _python_prose(text) if path.suffix == ".py" else text


def mentioned_paths(text: str) -> set[str]:
    found = set()
    for match in _PATH.finditer(text):
        path = match[1].rstrip(".,:;")
        if not _PLACEHOLDER.search(path):
            found.add(path)
    return found


def mentioned_modules(text: str) -> set[str]:
    return {m[1].rstrip(".") for m in _DOTTED.finditer(text)}


def path_exists(path: str, root: Path = ROOT) -> bool:
    if "*" in path:
        return any(root.glob(path))
    return (root / path).exists()


def _imported(source: str) -> set[str]:
    """The names a module binds by importing them (`lab.api.Scenario`, re-exported)."""
    tree = ast.parse(source)
    return {
        alias.asname or alias.name
        for node in tree.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }


def module_exists(dotted: str, root: Path = ROOT) -> bool:
    """A module (or package) of the lab, or a name a module defines (a method too) or
    imports."""
    parts = dotted.split(".")
    for cut in range(len(parts), 1, -1):
        base = root.joinpath(*parts[:cut])
        source = base.with_suffix(".py")
        if not source.is_file():
            source = base / "__init__.py"
        if not source.is_file():
            continue
        if cut == len(parts):
            return True
        name = re.escape(parts[cut])
        defined = rf"^\s*(?:def|class|async def) {name}\b|^{name}\s*[:=]"
        text = source.read_text(encoding="utf-8")
        return re.search(defined, text, re.MULTILINE) is not None or parts[cut] in _imported(text)
    return False


def test_every_path_the_project_names_exists() -> None:
    missing = []
    for source in _sources():
        text = prose(source)
        rel = source.relative_to(ROOT)
        missing += [f"{rel}: {p}" for p in sorted(mentioned_paths(text)) if not path_exists(p)]
        missing += [f"{rel}: {m}" for m in sorted(mentioned_modules(text)) if not module_exists(m)]
    assert not missing, "named but not in the repository:\n" + "\n".join(missing)


def test_nothing_points_outside_the_repository() -> None:
    outside = []
    for source in _sources():
        if source == Path(__file__).resolve():
            continue  # it names the patterns
        # the manual's links between its own pages are checked by its build
        in_manual = source.is_relative_to(ROOT / "docs") or source.name == "mkdocs.yml"
        for number, line in enumerate(source.read_text(encoding="utf-8").splitlines(), 1):
            if _OUTSIDE.search(line) or (not in_manual and _BARE_NOTES.search(line)):
                outside.append(f"{source.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not outside, "points outside the repository:\n" + "\n".join(outside)


def test_a_planted_bad_path_is_caught(tmp_path: Path) -> None:
    (tmp_path / "lab" / "judge").mkdir(parents=True)
    (tmp_path / "lab" / "judge" / "checker.py").write_text("def check_path():\n    pass\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "run-folder.md").write_text("# x\n")
    text = (
        "See `lab/judge/checker.py`, docs/run-folder.md, lab/judge/gone.py and "
        "`docs/nowhere.md`; lab.judge.checker.check_path and lab.judge.checker.no_such; "
        "lab.judge.absent.thing; a pattern lab/<role>/x.py, runs/<scenario>/ and lab/….\n"
    )
    paths = mentioned_paths(text)
    assert paths == {
        "lab/judge/checker.py", "docs/run-folder.md", "lab/judge/gone.py", "docs/nowhere.md",
    }  # fmt: skip
    assert [p for p in sorted(paths) if not path_exists(p, tmp_path)] == [
        "docs/nowhere.md", "lab/judge/gone.py",
    ]  # fmt: skip
    modules = mentioned_modules(text)
    assert [m for m in sorted(modules) if not module_exists(m, tmp_path)] == [
        "lab.judge.absent.thing", "lab.judge.checker.no_such",
    ]  # fmt: skip
    source = tmp_path / "m.py"
    source.write_text(
        '"""Reads lab/judge/gone.py."""\n# see docs/nowhere.md\nX = "lab/not_prose.py"\n'
    )
    assert mentioned_paths(prose(source)) == {"lab/judge/gone.py", "docs/nowhere.md"}
    assert _OUTSIDE.search("as in " + "../" + "shared/design/x.md")
    assert _OUTSIDE.search("the documents in " + "seeds/ predict")
    assert _OUTSIDE.search("(java-broker-ha-" + "groups.md, Node Operations)")
    assert not _OUTSIDE.search("docs/scenarios.md names the documents")
    assert _BARE_NOTES.search("J12 of scenarios.md") and _BARE_NOTES.search("(formats.md)")
    assert not _BARE_NOTES.search("J12 of docs/scenarios.md")
