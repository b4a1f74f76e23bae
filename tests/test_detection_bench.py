"""`lab bench detection` for real: a benchmark killed with SIGKILL leaves no mutated tree and no
process behind once the next `lab` command ran (its campaign dies with it; the run that campaign
had forked is stopped by that command); a whole (small) benchmark changes nothing of
the tree, leaves nothing behind and ends with its headline (--lab-long)."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from conftest import run_lab

from lab.bench.scratch import PREFIX
from lab.bench.zoo import load_zoo

pytestmark = pytest.mark.processes

ROOT = Path(__file__).resolve().parent.parent
TMP = Path(tempfile.gettempdir())


def _roots_of(pid: int) -> list[Path]:
    return sorted(TMP.glob(f"{PREFIX}{pid}-*"))


def _processes_under(folder: Path) -> list[str]:
    """Command lines of processes that run from `folder` (a scratch tree's lab or nodes)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cwd = os.readlink(proc / "cwd")
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if cwd.startswith(str(folder)) or str(folder) in cmdline:
            found.append(cmdline)
    return found


def _digests() -> dict[str, str]:
    files = {r.file for bug in load_zoo() for r in bug.replacements}
    return {f: hashlib.sha256((ROOT / f).read_bytes()).hexdigest() for f in sorted(files)}


def _start_until_a_campaign_runs(tmp_path: Path) -> tuple[subprocess.Popen[bytes], Path]:
    bench = subprocess.Popen(
        [
            *(sys.executable, "-m", "lab", "bench", "detection"),
            *("--bugs", "step-down-accepts-pending", "--budget", "5m", "--trials", "1"),
        ],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # as from a background shell: SIGINT ignored there is no help
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        campaigns = [r for r in _roots_of(bench.pid) if (r / "campaigns").is_dir()]
        if campaigns:
            return bench, campaigns[0]
        time.sleep(0.2)
    bench.kill()
    raise AssertionError("the benchmark never started a campaign")


def test_a_benchmark_stopped_by_sigterm_heals_and_removes_its_tree(tmp_path: Path) -> None:
    before = _digests()
    bench, root = _start_until_a_campaign_runs(tmp_path)
    bench.send_signal(signal.SIGTERM)
    assert bench.wait(timeout=300) == 130  # interrupted, as Ctrl-C
    assert not root.exists()
    assert _processes_under(root) == []
    assert _digests() == before


def test_a_benchmark_killed_with_sigkill_leaves_nothing_after_the_next_command(
    tmp_path: Path,
) -> None:
    before = _digests()
    bench, root = _start_until_a_campaign_runs(tmp_path)
    bench.send_signal(signal.SIGKILL)
    bench.wait()
    assert root.is_dir()  # no finally ran
    listed = run_lab("list", cwd=tmp_path)  # stops what still runs from the tree, removes it
    assert listed.returncode == 0
    assert not root.exists(), "the next lab command should remove a killed benchmark's tree"
    assert _processes_under(root) == []
    assert _digests() == before


@pytest.mark.long
def test_a_small_benchmark_ends_with_its_headline_and_changes_nothing(tmp_path: Path) -> None:
    before = _digests()
    page = tmp_path / "observed" / "detection.md"
    bench = subprocess.Popen(
        [
            *(sys.executable, "-m", "lab", "bench", "detection"),
            *("--bugs", "step-down-accepts-pending", "--budget", "3m", "--trials", "1"),
            *("--shrink-budget", "2m", "--control", "--page", str(page)),
        ],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    stdout, stderr = bench.communicate(timeout=1800)
    assert bench.returncode == 0, stderr
    last = stdout.splitlines()[-1]
    assert last.startswith("detection: random ") and "/1" in last
    figures = json.loads(page.with_suffix(".json").read_text())
    assert {(c["bug"], c["design"]) for c in figures["cells"]} == {
        ("step-down-accepts-pending", "replicated-group"),
        (None, "replicated-group"),
    }
    text = page.read_text()
    assert "lab bench detection --bugs step-down-accepts-pending" in text and last in text
    assert "step-down-accepts-pending · random · trial 1" in stderr
    assert _digests() == before
    assert _roots_of(bench.pid) == []
