"""The `lab` (and `pytest`) a reproduce line names is the one running, as a person types it
where the line is shown: `lab` when PATH finds this very one, else its absolute path, else
`PYTHON -m lab`; never a path of the lab's checkout (lab.ground.invocation)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lab.ground.invocation import shown_command


def _env(root: Path, name: str = "venv") -> tuple[Path, Path]:
    """A fake environment: bin/python and bin/lab, bin/pytest scripts."""
    bin_dir = root / name / "bin"
    bin_dir.mkdir(parents=True)
    for script in ("python", "lab", "pytest"):
        (bin_dir / script).write_text("#!/bin/sh\n")
        (bin_dir / script).chmod(0o755)
    return bin_dir / "python", bin_dir


def test_the_lab_on_path_is_named_lab(tmp_path: Path) -> None:
    python, bin_dir = _env(tmp_path)
    shown = shown_command(
        "lab", argv0=str(bin_dir / "lab"), executable=str(python), path=str(bin_dir)
    )
    assert shown == "lab"


def test_a_lab_off_path_is_named_by_its_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    python, bin_dir = _env(tmp_path)
    other_python, other_bin = _env(tmp_path, "another")  # PATH finds another lab
    monkeypatch.chdir(tmp_path)
    relative = os.path.relpath(bin_dir / "lab")  # as typed: venv/bin/lab
    assert shown_command("lab", argv0=relative, executable=str(python), path="") == str(
        bin_dir / "lab"
    )
    assert shown_command("lab", argv0=relative, executable=str(python), path=str(other_bin)) == str(
        bin_dir / "lab"
    )
    assert other_python != python


def test_under_pytest_or_python_m_the_lab_beside_the_python_is_named(tmp_path: Path) -> None:
    python, bin_dir = _env(tmp_path)
    pytest_script = str(bin_dir / "pytest")
    assert shown_command("lab", argv0=pytest_script, executable=str(python), path="") == str(
        bin_dir / "lab"
    )
    assert (
        shown_command("lab", argv0=pytest_script, executable=str(python), path=str(bin_dir))
        == "lab"
    )
    assert shown_command("pytest", argv0=pytest_script, executable=str(python), path="") == str(
        bin_dir / "pytest"
    )


def test_without_a_script_the_lab_is_run_as_a_module(tmp_path: Path) -> None:
    python = tmp_path / "py" / "python3"
    python.parent.mkdir()
    python.write_text("")
    shown = shown_command("lab", argv0="/x/lab/__main__.py", executable=str(python), path="")
    assert shown == f"{python} -m lab"


def test_a_path_with_a_space_is_quoted(tmp_path: Path) -> None:
    python, bin_dir = _env(tmp_path, "my env")
    shown = shown_command("lab", argv0=str(bin_dir / "lab"), executable=str(python), path="")
    assert shown == f"'{bin_dir / 'lab'}'"
