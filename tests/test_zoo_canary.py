"""The zoo's canaries (zoo/canary.py): applied after a bug's replacements in a scratch copy,
with the module they call; each process records the first call of each kind, only where the
benchmark asked for it (LAB_ZOO_CANARY)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import ROOT

from lab.bench.scratch import CANARY_ENV, BugDoesNotApply, ScratchRoot
from lab.bench.zoo import Replacement, load_bug

BUG = load_bug(ROOT / "zoo" / "election-forgets-recency.toml")


def test_canaries_are_applied_after_the_bug_with_their_module(tmp_path: Path) -> None:
    with ScratchRoot(tmp_path) as root:
        tree = root.tree("copy", BUG)
        assert (tree.path / "zoo_canary.py").read_bytes() == (ROOT / "zoo/canary.py").read_bytes()
        text = (tree.path / "broker_ref" / "election.py").read_text(encoding="utf-8")
        assert "zoo_canary.triggered(" in text
        assert "return theirs > mine\n        return ballot" not in text  # the bug is there too
        assert not (ROOT / "zoo_canary.py").exists()  # the product's tree is untouched


def test_a_canary_that_no_longer_applies_says_so(tmp_path: Path) -> None:
    stale = replace(BUG, canaries=(Replacement("broker_ref/election.py", "no such text", "x"),))
    with ScratchRoot(tmp_path) as root, pytest.raises(BugDoesNotApply) as refused:
        root.tree("copy", stale)
    assert "canary 1's old text is not there in broker_ref/election.py" in str(refused.value)


def _call(tree: Path, code: str, log: Path | None) -> None:
    env = {k: v for k, v in os.environ.items() if k != CANARY_ENV}
    env["PYTHONPATH"] = str(tree)
    if log is not None:
        env[CANARY_ENV] = str(log)
    subprocess.run([sys.executable, "-c", code], env=env, check=True, cwd=tree)


def test_each_process_records_the_first_call_of_each_kind(tmp_path: Path) -> None:
    with ScratchRoot(tmp_path) as root:
        tree = root.tree("copy", BUG)
        log = tmp_path / "canary.jsonl"
        code = (
            "import zoo_canary\n"
            "zoo_canary.reached('a'); zoo_canary.reached('b'); zoo_canary.triggered('c')\n"
        )
        _call(tree.path, code, log)
        _call(tree.path, code, log)
        _call(tree.path, code, None)  # not asked: nothing written
        lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert [(r["what"], r["detail"]) for r in lines] == [
        ("reached", "a"),
        ("triggered", "c"),
        ("reached", "a"),
        ("triggered", "c"),
    ]
    assert lines[0]["pid"] != lines[2]["pid"] and all(r["t"] > 0 for r in lines)
