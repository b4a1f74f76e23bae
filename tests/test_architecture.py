"""The shape of the code, read from its imports: layers that import one way, no circles,
no module too long to read, and the lint and type checks clean.

    ground ← faults ← judge ← scenarios ← run ← targets ← backends, manager ← compose
           ← reporting, campaign, spark_reports ← bench ← cli, pytest plugin

`broker_ref` and `clients` run as processes of their own (a node, a worker) and import
nothing of the lab; tests import whatever they test.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("lab", "faults", "scenarios", "clients", "broker_ref", "spark_reports")

# The layer of each folder (the longest matching prefix wins); a module may import only
# from its own layer or one below it.
LAYERS: dict[str, int] = {
    "lab": 0,  # lab/__init__.py: the version only
    "lab.ground": 0,
    "faults": 1,
    "lab.judge": 2,
    "scenarios": 3,
    "lab.run": 4,
    "lab.targets": 5,
    "lab.backends": 6,
    "lab.manager": 6,
    "lab.compose": 7,
    "lab.reporting": 8,
    "lab.campaign": 8,
    "lab.library": 8,
    "spark_reports": 8,
    "lab.bench": 9,
    "lab.cli": 10,
    "lab.pytest_plugin": 10,
    "lab.pytest_campaign": 10,
    "lab.pytest_hosts": 10,
    "lab.pytest_targets": 10,
    "lab.api": 10,
    "lab.__main__": 10,
}
SELF_CONTAINED = ("broker_ref", "clients")
MAX_LINES = 400


def _is_test(path: Path) -> bool:
    rel = path.relative_to(ROOT)
    return rel.parts[0] == "tests" or rel.name.startswith("test_") or rel.name == "conftest.py"


def _sources(include_tests: bool = False) -> Iterator[Path]:
    for package in (*PACKAGES, "tests"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if include_tests or not _is_test(path):
                yield path


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every project module `path` imports, at the top or inside a function."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        found.update(n for n in names if n.split(".")[0] in PACKAGES)
    return found


def _known(modules: set[str], name: str) -> str | None:
    """The project module `name` refers to (`from lab.x import y` may name a function)."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def _graph() -> dict[str, set[str]]:
    paths = {_module(p): p for p in _sources()}
    modules = set(paths)
    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        targets = {_known(modules, name) for name in _imports(path)}
        graph[module] = {t for t in targets if t is not None and t != module}
    return graph


def _layer(module: str) -> int | None:
    best: tuple[int, int] | None = None
    for prefix, layer in LAYERS.items():
        if (module == prefix or module.startswith(prefix + ".")) and (
            best is None or len(prefix) > best[0]
        ):
            best = (len(prefix), layer)
    return None if best is None else best[1]


def test_every_module_has_a_layer() -> None:
    unplaced = [m for m in _graph() if _layer(m) is None and not m.startswith(SELF_CONTAINED)]
    assert not unplaced, f"modules outside every layer: {unplaced}"


def test_imports_never_point_up() -> None:
    upward = []
    for module, targets in _graph().items():
        mine = _layer(module)
        if mine is None:
            continue
        for target in targets:
            theirs = _layer(target)
            if theirs is not None and theirs > mine:
                upward.append(f"{module} (layer {mine}) imports {target} (layer {theirs})")
    assert not upward, "upward imports:\n" + "\n".join(sorted(upward))


def test_processes_of_their_own_import_nothing_of_the_lab() -> None:
    leaks = [
        f"{module} imports {target}"
        for module, targets in _graph().items()
        if module.startswith(SELF_CONTAINED)
        for target in targets
        if target.split(".")[0] != module.split(".")[0]
    ]
    assert not leaks, "\n".join(leaks)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_circles() -> None:
    assert _cycles(_graph()) == []


def test_the_circle_finder_finds_a_circle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_layer_check_sees_an_upward_import() -> None:
    assert _layer("lab.ground.spec") == 0
    assert _layer("lab.cli.main") == 10
    assert _layer("lab.backends.docker.cluster") == 6
    assert _layer("lab.judge.checker") < _layer("scenarios.base")  # type: ignore[operator]


def test_no_module_is_too_long_to_read() -> None:
    long = [
        f"{p.relative_to(ROOT)} ({n} lines)"
        for p in _sources(include_tests=True)
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    ]
    assert not long, f"modules over {MAX_LINES} lines: {long}"


def _tool(name: str, *args: str) -> subprocess.CompletedProcess[str]:
    tool = Path(sys.executable).parent / name
    if not tool.is_file():
        pytest.fail(f"{tool} is missing: the lab's dev packages are not installed")
    return subprocess.run(
        [str(tool), *args], cwd=ROOT, capture_output=True, text=True, timeout=600, check=False
    )


def test_ruff_finds_nothing() -> None:
    done = _tool("ruff", "check", ".")
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_code_is_formatted() -> None:
    done = _tool("ruff", "format", "--check", ".")
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_finds_nothing() -> None:
    done = _tool("mypy", ".")
    assert done.returncode == 0, done.stdout + done.stderr
