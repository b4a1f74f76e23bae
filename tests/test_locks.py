"""The lock files (locks/, made by scripts/lock.sh): one per install set the bootstrap knows,
every pin with its hashes, each set agreeing with the others, each pin inside pyproject.toml's
ranges (a range edited without re-locking fails here, not on a newcomer's machine); and the
drift report the newest-versions job names changed packages with."""

from __future__ import annotations

import re
import runpy
import tomllib
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT
from packaging.requirements import Requirement

LOCKS = ROOT / "locks"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
DRIFT: dict[str, Any] = runpy.run_path(str(ROOT / "scripts" / "lock_drift.py"))
SETS = ("core", "reports", "docker", "hosts", "tests")


def _entries(lock: Path) -> list[tuple[str, str, str | None, list[str]]]:
    """(name, version, marker, hashes) of every requirement of a lock file."""
    entries = []
    text = lock.read_text(encoding="utf-8")
    for block in re.split(r"\n(?=[A-Za-z0-9])", text):
        first = block.splitlines()[0]
        if first.startswith("#"):
            continue
        requirement = Requirement(first.rstrip(" \\"))
        (spec,) = requirement.specifier
        marker = str(requirement.marker) if requirement.marker else None
        entries.append(
            (
                DRIFT["canonical"](requirement.name),
                spec.version,
                marker,
                re.findall(r"--hash=sha256:[0-9a-f]{64}", block),
            )
        )
    return entries


def _requirements(extra: str | None) -> list[Requirement]:
    project = PYPROJECT["project"]
    listed = project["dependencies"] if extra is None else project["optional-dependencies"][extra]
    found: list[Requirement] = []
    for line in listed:
        requirement = Requirement(line)
        if requirement.name == project["name"]:  # an extra naming others: theirs too
            for other in sorted(requirement.extras):
                found += _requirements(other)
        else:
            found.append(requirement)
    return found


def test_every_install_set_of_the_bootstrap_has_a_lock() -> None:
    bootstrap = (ROOT / "scripts" / "bootstrap.sh").read_text(encoding="utf-8")
    options = set(re.findall(r"^\s+--(\w+)(?:\|--\w+)?\) extras\+=\((\w+)\)", bootstrap, re.M))
    assert {lock for _, lock in options} == set(SETS) - {"core"}
    assert sorted(p.stem for p in LOCKS.glob("*.txt")) == sorted([*SETS, "build"])


@pytest.mark.parametrize("name", [*SETS, "build"])
def test_every_pin_is_exact_and_hashed(name: str) -> None:
    entries = _entries(LOCKS / f"{name}.txt")
    assert entries
    for package, version, _, hashes in entries:
        assert version and hashes, f"{package} in locks/{name}.txt has no pin or no hash"


def test_the_sets_agree_on_every_version() -> None:
    everything = {(p, m): v for p, v, m, _ in _entries(LOCKS / "tests.txt")}
    for name in [*SETS, "build"]:
        for package, version, marker, _ in _entries(LOCKS / f"{name}.txt"):
            if (package, marker) in everything:
                assert everything[(package, marker)] == version, (name, package)


@pytest.mark.parametrize("name", SETS)
def test_each_lock_meets_the_ranges_of_its_set(name: str) -> None:
    extra = {"core": None, "tests": "dev"}.get(name, name)
    pins = DRIFT["locked_versions"]((LOCKS / f"{name}.txt").read_text(encoding="utf-8"))
    wanted = _requirements(None) + ([] if extra is None else _requirements(extra))
    for requirement in wanted:
        if requirement.marker and not requirement.marker.evaluate():
            continue
        package = DRIFT["canonical"](requirement.name)
        assert package in pins, f"{package} is not in locks/{name}.txt: run scripts/lock.sh"
        assert requirement.specifier.contains(pins[package], prereleases=True), (
            f"locks/{name}.txt pins {package} {pins[package]}, outside {requirement}: "
            "run scripts/lock.sh"
        )


def test_the_build_lock_holds_what_builds_need() -> None:
    pins = DRIFT["locked_versions"]((LOCKS / "build.txt").read_text(encoding="utf-8"))
    backend = [Requirement(r) for r in PYPROJECT["build-system"]["requires"]]
    for requirement in backend:
        assert requirement.specifier.contains(pins[DRIFT["canonical"](requirement.name)])
    assert "cffi" in pins  # Qpid Proton's sdist builds with it


def test_drift_names_what_changed_from_the_lock() -> None:
    lock = (
        "numpy==2.4.6 ; python_full_version < '3.12' \\\n    --hash=sha256:aa\n"
        "numpy==2.5.5 ; python_full_version >= '3.12' \\\n    --hash=sha256:bb\n"
        "cryptography==46.0.1 \\\n    --hash=sha256:cc\n"
        "pywin32==312 ; sys_platform == 'win32' \\\n    --hash=sha256:dd\n"
        "Typing_Extensions==4.1.0 \\\n    --hash=sha256:ee\n"
    )
    linux311 = {"python_full_version": "3.11.7", "sys_platform": "linux"}
    locked = DRIFT["locked_versions"](lock, linux311)
    assert locked == {"numpy": "2.4.6", "cryptography": "46.0.1", "typing-extensions": "4.1.0"}
    installed = {"numpy": "2.4.6", "cryptography": "51.0.1", "asyncssh": "2.24.1", "pip": "25"}
    assert DRIFT["drift"](locked, installed, frozenset({"pip"})) == [
        "asyncssh not in the lock → 2.24.1",
        "cryptography 46.0.1 → 51.0.1",
        "typing-extensions 4.1.0 → not installed",
    ]


def test_this_environment_is_what_the_locks_say() -> None:
    # The suite runs in the environment the bootstrap made from the locks.
    lock = (LOCKS / "tests.txt").read_text(encoding="utf-8")
    differ = DRIFT["drift"](
        DRIFT["locked_versions"](lock), DRIFT["installed_versions"](), DRIFT["NOT_LOCKED"]
    )
    assert differ == [], "the environment is not the lock's: run scripts/bootstrap.sh --tests"
