"""Optional packages are imported only when used: with AsyncSSH, the Docker SDK,
testcontainers, PySpark, DuckDB and matplotlib made unimportable (tests/unimportable), the
commands of a first run work, print nothing on stderr and never try to import one of them; a
command that needs one refuses in one line. The lab's own AsyncSSH import is the only one."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from checker_helpers import drained, got, sent, write_history

ROOT = Path(__file__).resolve().parent.parent
OPTIONAL = ("asyncssh", "docker", "testcontainers", "pyspark", "matplotlib", "duckdb")


def _lab_without_optional(
    *args: str, cwd: Path, timeout: float = 60
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """`lab ARGS` in an environment where the optional packages cannot be imported; its
    result, and the imports of them that were tried (by the lab or any child it started)."""
    log = cwd / "tried-imports.log"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            filter(None, [str(ROOT / "tests" / "unimportable"), os.environ.get("PYTHONPATH")])
        ),
        "LAB_TEST_UNIMPORTABLE": ",".join(OPTIONAL),
        "LAB_TEST_UNIMPORTABLE_LOG": str(log),
        "PYTHONWARNINGS": "default",
    }
    done = subprocess.run(
        [sys.executable, "-m", "lab", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    tried = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    return done, tried


def test_the_blocker_itself_refuses_an_import(tmp_path: Path) -> None:
    # The check below means something only if an import of a blocked package does fail.
    probe = subprocess.run(
        [sys.executable, "-c", "import asyncssh"],
        env={
            **os.environ,
            "PYTHONPATH": str(ROOT / "tests" / "unimportable"),
            "LAB_TEST_UNIMPORTABLE": "asyncssh",
            "LAB_TEST_UNIMPORTABLE_LOG": str(tmp_path / "probe.log"),
        },
        capture_output=True,
        text=True,
        check=False,
    )
    assert probe.returncode == 1 and "made unimportable" in probe.stderr
    assert (tmp_path / "probe.log").read_text(encoding="utf-8").split()[1] == "asyncssh"


@pytest.mark.parametrize(
    "args",
    [("list",), ("run", "--help"), ("doctor",), ("campaign", "--help")],
    ids=["list", "run-help", "doctor", "campaign-help"],
)
def test_commands_of_a_first_run_need_no_optional_package(
    args: tuple[str, ...], tmp_path: Path
) -> None:
    done, tried = _lab_without_optional(*args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert tried == []
    assert done.stderr == ""
    assert done.stdout


def test_checking_a_history_needs_no_optional_package(tmp_path: Path) -> None:
    history = write_history(tmp_path, sent("m1") + sent("m2") + got("m1") + drained("c0"))
    done, tried = _lab_without_optional("check", str(history), cwd=tmp_path)
    assert done.returncode == 1  # m2 acknowledged and never received
    assert tried == []
    assert done.stderr == ""
    assert "acknowledged=2" in done.stdout and "lost=1" in done.stdout


@pytest.mark.parametrize(
    ("args", "extra"),
    [
        (("run", "single-node-crash", "--backend", "docker"), "docker"),
        (("report", "RUNS", "--out", "OUT"), "reports"),
    ],
    ids=["docker-backend", "report"],
)
def test_a_command_that_needs_a_missing_package_says_so_in_one_line(
    args: tuple[str, ...], extra: str, tmp_path: Path
) -> None:
    (tmp_path / "RUNS").mkdir()
    done, _ = _lab_without_optional(*args, cwd=tmp_path)
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert f"ha-chaos-lab[{extra}]" in lines[0]


@pytest.mark.processes
def test_a_first_run_needs_no_optional_package(tmp_path: Path) -> None:
    done, tried = _lab_without_optional(
        "run",
        "single-node-crash",
        "--seed",
        "3",
        "--runs-dir",
        str(tmp_path / "runs"),
        cwd=tmp_path,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert tried == []
    assert "prediction held" in done.stdout
    assert not re.search(r"Warning\b", done.stderr), done.stderr[-2000:]


def test_the_lab_imports_asyncssh_in_one_place_only() -> None:
    importing = sorted(
        str(path.relative_to(ROOT))
        for package in ("lab", "broker_ref", "clients", "faults", "scenarios", "spark_reports")
        for path in (ROOT / package).rglob("*.py")
        if re.search(r"^\s*(import asyncssh|from asyncssh\b)", path.read_text(), re.MULTILINE)
    )
    assert importing == ["lab/backends/ssh/quiet_asyncssh.py"]
