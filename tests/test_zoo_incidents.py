"""Each zoo bug is detectable at all: its incident, run by the `lab` of a scratch copy with the
bug applied, is broken (or unknown) with one of the violation kinds the bug expects, and the
same incident on a copy without the bug holds. A probe in the copy proves what ran: every
node says which broker_ref it imported, and an active-passive run's cluster manager which
lab.manager, both the copy's.

Each run also says, through the bug's canaries (zoo/canary.py), that the buggy code was
reached and triggered (did what the correct code would not).

The cheap bugs (one per HA design) run in the default suite; every bug, with its control on
the tree without a bug, behind --lab-long."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from lab.bench.scratch import ScratchRoot, Tree, apply_bug
from lab.bench.zoo import Bug, Replacement, load_zoo

pytestmark = pytest.mark.processes

BUGS = load_zoo()
CHEAP = [b for b in BUGS if b.cheap]
PROBE = Bug(
    name="probe",
    design="replicated-group",
    breaks="nothing: it says where the node's and the manager's modules come from",
    claim="-",
    document="-",
    expect=(),
    cheap=True,
    replacements=(
        Replacement(
            "broker_ref/__main__.py",
            "    args = parser.parse_args(argv)\n",
            "    args = parser.parse_args(argv)\n"
            '    print(f"zoo probe: broker_ref from {__file__}", file=sys.stderr, flush=True)\n',
        ),
        Replacement(
            "lab/manager/manager.py",
            '        self._events.emit("manager.start", None)',
            '        self._events.emit("manager.start", None, module=__file__)',
        ),
    ),
    source=Path("probe.toml"),
)


def _run_incident(
    tree: Tree, bug: Bug, runs: Path, canary_log: Path | None = None
) -> tuple[Path, dict[str, Any]]:
    argv, where = tree.lab(
        "run", "--spec", str(bug.incident), "--runs-dir", str(runs), canary_log=canary_log
    )
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, **where)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    folder = Path(done.stdout.splitlines()[0])
    return folder, json.loads((folder / "result.json").read_text(encoding="utf-8"))


def _assert_the_copy_ran(folder: Path, tree: Tree, design: str) -> None:
    nodes = sorted(p for p in (folder / "nodes").iterdir() if p.is_dir())
    assert nodes
    for node in nodes:
        said = (node / "stderr.log").read_text(encoding="utf-8")
        assert f"zoo probe: broker_ref from {tree.path / 'broker_ref' / '__main__.py'}" in said
    if design == "active-passive":
        lines = (folder / "events.jsonl").read_text(encoding="utf-8").splitlines()
        starts = [e for e in map(json.loads, lines) if e.get("kind") == "manager.start"]
        assert starts and {e["module"] for e in starts} == {
            str(tree.path / "lab" / "manager" / "manager.py")
        }


def _canaries(log: Path) -> dict[str, str]:
    """What the bug's canaries recorded, by kind (reached, triggered): the first detail."""
    seen: dict[str, str] = {}
    lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    for record in map(json.loads, lines):
        seen.setdefault(record["what"], record["detail"])
    return seen


def _detected(bug: Bug, result: dict[str, Any]) -> bool:
    return result["verdict"] in ("broken", "unknown") and bool(
        set(result["violations"]) & set(bug.expect)
    )


@pytest.mark.parametrize("bug", CHEAP, ids=[b.name for b in CHEAP])
def test_a_cheap_bugs_incident_is_detected_and_run_by_the_copy(bug: Bug, tmp_path: Path) -> None:
    with ScratchRoot(tmp_path) as root:
        tree = root.tree("mutant", bug)
        apply_bug(tree.path, PROBE)
        log = tmp_path / "canary.jsonl"
        folder, result = _run_incident(tree, bug, tmp_path / "runs", log)
        assert _detected(bug, result), (bug.expect, result["verdict"], result["reasons"])
        _assert_the_copy_ran(folder, tree, bug.design)
        assert {"reached", "triggered"} <= set(_canaries(log)), _canaries(log)


@pytest.mark.long
@pytest.mark.parametrize("bug", BUGS, ids=[b.name for b in BUGS])
def test_every_bugs_incident_is_detected_and_holds_without_the_bug(
    bug: Bug, tmp_path: Path
) -> None:
    with ScratchRoot(tmp_path) as root:
        mutant = root.tree("mutant", bug)
        apply_bug(mutant.path, PROBE)
        log = tmp_path / "canary.jsonl"
        folder, result = _run_incident(mutant, bug, tmp_path / "mutant", log)
        assert _detected(bug, result), (bug.expect, result["verdict"], result["reasons"])
        _assert_the_copy_ran(folder, mutant, bug.design)
        # The schedule provoked the bug: its canaries say the code ran and misbehaved.
        assert {"reached", "triggered"} <= set(_canaries(log)), _canaries(log)
        _, control = _run_incident(root.tree("clean"), bug, tmp_path / "clean")
        assert control["verdict"] == "held", ("without the bug", control["reasons"])
