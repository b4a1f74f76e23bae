"""A virtual environment of its own for examples/, with the lab installed from this checkout
as a dependency, the way a user's project installs it (test_library_example.py).

    wheelhouse(scratch, extras)    the lab's dependencies (with those of `extras`), pytest(-xdist)
                                   and the build backend as wheels: fetched with pip once per
                                   machine (per set of dependencies), then installed from
                                   without a network
    make_venv(root, extras=(), bug=None) -> (python, example)
                                   a venv under `root` with copies of the lab's sources (with
                                   its `extras`; a zoo bug planted in the copy first, as
                                   lab.bench.scratch plants one) and of examples/ installed in
                                   it, and pytest

The lab and the example are copied first, so building them leaves nothing in the checkout.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from lab.bench.scratch import apply_bug
from lab.bench.zoo import Bug
from lab.ground.errors import SetupError
from lab.ground.locks import host_lock
from lab.ground.paths import user_cache

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("lab", "broker_ref", "clients", "faults", "scenarios", "spark_reports", "containers")
BUILD = ("setuptools>=68", "wheel")
TEST = ("pytest", "pytest-xdist")  # the example's suite runs two tests at a time
_IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", "build", "*.egg-info", ".venv")


def _pip(*args: str, timeout_s: float = 900.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", *args],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )


def _copy_lab(into: Path) -> Path:
    into.mkdir(parents=True)
    for name in PACKAGES:
        shutil.copytree(ROOT / name, into / name, ignore=_IGNORED)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, into / name)
    return into


def _extras(extras: tuple[str, ...]) -> str:
    return f"[{','.join(extras)}]" if extras else ""


def wheelhouse(scratch: Path, extras: tuple[str, ...] = ()) -> Path:
    """The folder of wheels, made under a machine-wide lock the first time (network: pip)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    needed = [r for e in extras for r in project["optional-dependencies"][e]]
    wanted = [*project["dependencies"], *needed, *TEST, *BUILD, sys.version]
    key = hashlib.sha256("\n".join(wanted).encode()).hexdigest()[:12]
    house = user_cache() / "wheels" / f"example-venv-{key}"
    with host_lock(f"example-venv-{key}"):
        if (house / ".complete").is_file():
            return house
        staging = house.with_name(house.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        lab = _copy_lab(scratch / "lab-for-wheels")
        done = _pip(
            *("wheel", "--quiet", "-w", str(staging), f"{lab}{_extras(extras)}", *TEST, *BUILD)
        )
        if done.returncode != 0:
            detail = (done.stderr or done.stdout).strip().splitlines()
            raise SetupError(f"pip could not fetch the lab's dependencies: {detail[-1:]}")
        for own in staging.glob("ha_chaos_lab-*.whl"):  # the lab comes from the checkout
            own.unlink()
        (staging / ".complete").write_text("\n".join(wanted) + "\n", encoding="utf-8")
        shutil.rmtree(house, ignore_errors=True)
        staging.rename(house)
    return house


def make_venv(
    root: Path, extras: tuple[str, ...] = (), bug: Bug | None = None
) -> tuple[Path, Path]:
    """(the venv's python, the copy of examples/ to run its tests in)."""
    house = wheelhouse(root, extras)
    lab = _copy_lab(root / "lab")
    if bug is not None:
        # The lab's broker_ref, and so the example's broker, carries it (no canaries: they
        # record to a file only the detection benchmark asks for).
        apply_bug(lab, bug, canaries=False)
    example = root / "example"
    shutil.copytree(ROOT / "examples", example, ignore=_IGNORED)
    venv = root / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300
    )
    python = venv / "bin" / "python"
    done = _pip(
        *("--python", str(python), "install", "--quiet", "--no-index"),
        *("--find-links", str(house), f"{lab}{_extras(extras)}", str(example), *TEST),
    )
    if done.returncode != 0:
        raise AssertionError(f"pip install into {venv} failed:\n{done.stdout}{done.stderr}")
    return python, example
