"""`lab allure RESULTS_DIR --out DIR`: an Allure HTML report from allure-pytest's results.

The Allure command line (npm package `allure-commandline`, which bundles Allure 2 and
needs only Java) is installed on first use into a folder the lab owns,

    <tools dir>/allure/node_modules/allure-commandline/dist/bin/allure

with `npm install --prefix`, into a staging folder renamed into place, under a lock,
so two lab commands never install it twice and an interrupted install leaves nothing
half-done. Later calls only check the installed version.

Before generating, the results folder gets categories.json (failures by violation kind),
and on request the previous report's history (the Trend) and executor.json (the CI run):
lab.reporting.allure_ci.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from lab.ground.errors import InputError, LabError, SetupError
from lab.reporting.allure_ci import Executor, prepare_results

__all__ = [
    "ALLURE_COMMANDLINE_VERSION",
    "DEFAULT_TOOLS_DIR",
    "allure_launcher",
    "generate_report",
    "installed_version",
]

ALLURE_COMMANDLINE_VERSION = "2.46.1"
DEFAULT_TOOLS_DIR = Path(".lab/tools")
_PACKAGE = "allure-commandline"
_INSTALL_TIMEOUT_S = 900.0
_GENERATE_TIMEOUT_S = 900.0

Say = Callable[[str], None]


def _package_dir(install_dir: Path) -> Path:
    return install_dir / "node_modules" / _PACKAGE


def installed_version(install_dir: Path) -> str | None:
    """The allure-commandline version installed in `install_dir`, if its launcher is there."""
    package = _package_dir(install_dir)
    if not (package / "dist" / "bin" / "allure").is_file():
        return None
    try:
        version = json.loads((package / "package.json").read_text(encoding="utf-8"))["version"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return str(version)


def _java() -> str:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").is_file():
        return str(Path(java_home) / "bin" / "java")
    found = shutil.which("java")
    if found is None:
        raise SetupError(
            "Allure needs Java to generate a report: install a Java runtime 8 or newer "
            "(e.g. `apt-get install default-jre-headless`) or set JAVA_HOME"
        )
    return found


def _tail(text: str, lines: int = 3) -> str:
    kept = [line for line in text.strip().splitlines() if line.strip()][-lines:]
    return " | ".join(kept) or "no output"


def _install(install_dir: Path, say: Say) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise SetupError(
            f"installing {_PACKAGE} needs npm: install Node.js and npm (e.g. `apt-get install npm`)"
        )
    staging = install_dir.with_name(f"{install_dir.name}.installing-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    say(
        f"lab: installing {_PACKAGE} {ALLURE_COMMANDLINE_VERSION} into {install_dir} "
        "with npm (once, about 35 MB)"
    )
    started = time.monotonic()
    try:
        done = subprocess.run(
            [
                npm,
                "install",
                "--prefix",
                str(staging),
                "--no-audit",
                "--no-fund",
                "--no-update-notifier",
                "--loglevel=error",
                f"{_PACKAGE}@{ALLURE_COMMANDLINE_VERSION}",
            ],
            capture_output=True,
            text=True,
            timeout=_INSTALL_TIMEOUT_S,
            check=False,
        )
        if done.returncode != 0 or installed_version(staging) != ALLURE_COMMANDLINE_VERSION:
            raise SetupError(
                f"npm could not install {_PACKAGE}@{ALLURE_COMMANDLINE_VERSION} "
                f"(exit {done.returncode}): {_tail(done.stderr or done.stdout)}"
            )
        shutil.rmtree(install_dir, ignore_errors=True)
        os.replace(staging, install_dir)
    except subprocess.TimeoutExpired as exc:
        raise SetupError(
            f"npm did not install {_PACKAGE} within {_INSTALL_TIMEOUT_S:.0f} s"
        ) from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    took = time.monotonic() - started
    say(f"lab: installed {_PACKAGE} {ALLURE_COMMANDLINE_VERSION} in {took:.1f} s")


def allure_launcher(tools_dir: Path, say: Say) -> Path:
    """The lab's own Allure command line under `tools_dir`, installed if it is missing."""
    install_dir = (tools_dir / "allure").absolute()
    if installed_version(install_dir) != ALLURE_COMMANDLINE_VERSION:
        tools_dir.mkdir(parents=True, exist_ok=True)
        with (tools_dir / "allure.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # another lab command may be installing it
            if installed_version(install_dir) != ALLURE_COMMANDLINE_VERSION:
                _install(install_dir, say)
    return _package_dir(install_dir) / "dist" / "bin" / "allure"


def generate_report(
    results_dir: Path,
    out_dir: Path,
    *,
    tools_dir: Path,
    say: Say,
    history_from: Path | None = None,
    executor: Executor | None = None,
) -> Path:
    """`allure generate RESULTS_DIR -o OUT_DIR --clean`; returns OUT_DIR/index.html.
    RESULTS_DIR gets categories.json first, and `history_from`'s history/ and executor.json
    when given (lab.reporting.allure_ci)."""
    if not results_dir.is_dir():
        raise InputError(f"{results_dir}: no such results folder (give pytest's --alluredir)")
    prepare_results(results_dir, history_from=history_from, executor=executor)
    if not any(results_dir.glob("*-result.json")):
        say(f"lab: {results_dir} holds no test results yet; the report will be empty")
    java = _java()
    launcher = allure_launcher(tools_dir, say)
    say(f"lab: generating the Allure report from {results_dir} into {out_dir}")
    env = {**os.environ, "JAVA_HOME": _java_home(java)}
    try:
        done = subprocess.run(
            [str(launcher), "generate", str(results_dir), "-o", str(out_dir), "--clean"],
            capture_output=True,
            text=True,
            env=env,
            timeout=_GENERATE_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise LabError(
            f"allure generate did not finish within {_GENERATE_TIMEOUT_S:.0f} s"
        ) from exc
    index = out_dir / "index.html"
    if done.returncode != 0 or not index.is_file():
        raise LabError(
            f"allure generate failed (exit {done.returncode}): {_tail(done.stderr or done.stdout)}"
        )
    return index


def _java_home(java: str) -> str:
    """JAVA_HOME for the `java` found on PATH (its bin folder's parent, links resolved)."""
    return str(Path(java).resolve().parent.parent)
