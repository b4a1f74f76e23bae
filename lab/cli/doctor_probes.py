"""What `lab doctor` looks for: one probe per piece the lab can use, each saying what it found,
what the piece enables, and the command that installs it.

A probe only looks: it starts no engine, fetches nothing and installs nothing, and each answers
within a few seconds (commands that print a version are given 20 s on a loaded machine)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from lab.backends.toxiproxy import install_hint
from lab.ground.extras import DOCKER, HOSTS, REPORTS, Extra

__all__ = ["PROBES", "Finding", "Probe"]

_VERSION_TIMEOUT_S = 20.0


@dataclass(frozen=True)
class Finding:
    """What a probe found: whether the piece is usable here, and a few words on it."""

    ok: bool
    detail: str


@dataclass(frozen=True)
class Probe:
    """One piece of the lab's machine: how to look for it, what it enables, how to get it."""

    name: str
    enables: str
    install: str
    look: Callable[[], Finding]
    needed_for_first_run: bool = False


def _version_of(command: list[str], pattern: str = r"(\d+(?:\.\d+)+)") -> str | None:
    """The first version number a command prints (stdout or stderr), or None if it fails."""
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=_VERSION_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.search(pattern, done.stdout + done.stderr)
    return found.group(1) if found else ("found" if done.returncode == 0 else None)


def _command(name: str, version_args: tuple[str, ...] = ("--version",)) -> Finding:
    path = shutil.which(name)
    if path is None:
        return Finding(False, f"no `{name}` on PATH")
    version = _version_of([path, *version_args])
    return Finding(version is not None, f"{version or 'does not run'} ({path})")


def _python() -> Finding:
    ok = sys.version_info >= (3, 11)
    return Finding(ok, f"{sys.version.split()[0]} ({sys.executable})")


def _toxiproxy() -> Finding:
    from lab.backends.toxiproxy import find_server_binary
    from lab.ground.errors import SetupError

    try:
        path = find_server_binary()
    except SetupError:
        return Finding(False, "not on PATH, not in .venv/bin")
    version = _version_of([path, "-version"], r"version (\S+)")
    return Finding(version is not None, f"{version or 'does not run'} ({path})")


def _extra(extra: Extra) -> Callable[[], Finding]:
    def look() -> Finding:
        missing = extra.missing()
        if missing:
            return Finding(False, f"missing: {', '.join(missing)}")
        return Finding(True, ", ".join(extra.modules))

    return look


def _java() -> Finding:
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not java or not Path(java).exists():
        return Finding(False, "no `java` on PATH (nor JAVA_HOME)")
    version = _version_of([java, "-version"], r'version "([^"]+)"')
    jcmd = Path(java).resolve().parent / "jcmd"
    kind = "JDK" if jcmd.exists() else "JRE only (no jcmd: full_gc needs a JDK)"
    return Finding(version is not None, f"{version or 'does not run'}, {kind} ({java})")


def _docker_engine() -> Finding:
    if not DOCKER.installed:
        return Finding(False, "the Docker SDK is not installed (the docker packages, above)")
    from lab.backends.docker.engine import dockerd_running, engine_answers

    if engine_answers():
        return Finding(True, "an engine answers")
    if shutil.which("dockerd") is None:
        return Finding(False, "no engine answers and no `dockerd` is installed")
    state = "running but not answering" if dockerd_running() else "installed, not running"
    return Finding(False, f"dockerd {state}")


def _broker_j() -> Finding:
    from lab.targets.brokerj.distribution import VERSION, cache_root, tarball_in_repository

    home = cache_root() / "broker-j" / VERSION / "home"
    if (home / "lib").is_dir():
        return Finding(True, f"{VERSION} unpacked ({home})")
    if tarball_in_repository(VERSION).is_file():
        return Finding(True, f"{VERSION} in the Maven repository, unpacked on first use")
    return Finding(False, f"{VERSION} not fetched yet (fetched with Maven on first use)")


def _rabbitmq() -> Finding:
    from lab.targets.rabbitmq.install import SERVER, VERSION, installed_version

    version = installed_version()
    if version is None:
        return Finding(False, "not installed (Debian's rabbitmq-server)")
    note = "" if version == VERSION else f"; the lab's runs were made with {VERSION}"
    return Finding(True, f"{version} ({SERVER}{note})")


def _class_archive() -> Finding:
    if not REPORTS.installed:
        return Finding(False, "no reports packages to record it for")
    from spark_reports.class_archive import archive_path

    path = archive_path()
    if path is None:
        return Finding(False, "no Java: Spark cannot run")
    if path.is_file():
        return Finding(True, str(path))
    return Finding(False, "not made yet (the first report makes it)")


def _allure() -> Finding:
    from lab.reporting.allure_cli import DEFAULT_TOOLS_DIR, installed_version

    version = installed_version(DEFAULT_TOOLS_DIR / "allure")
    if version is not None:
        return Finding(True, f"{version} ({DEFAULT_TOOLS_DIR / 'allure'})")
    if shutil.which("npm") is None:
        return Finding(False, "not installed, and no `npm` to install it with")
    return Finding(False, "not installed yet (npm installs it on first use)")


def _root() -> Finding:
    if os.geteuid() == 0:
        return Finding(True, "running as root")
    return Finding(False, f"running as uid {os.geteuid()}")


PROBES: tuple[Probe, ...] = (
    Probe(
        "Python",
        "the lab itself (3.11 or newer)",
        "install Python 3.11 or newer",
        _python,
        needed_for_first_run=True,
    ),
    Probe(
        "Toxiproxy server",
        "every run: each client and node link goes through it",
        install_hint(),
        _toxiproxy,
        needed_for_first_run=True,
    ),
    Probe(
        "Go",
        "building Toxiproxy and actionlint",
        "apt-get install golang",
        lambda: _command("go", ("version",)),
    ),
    Probe("reports packages", REPORTS.enables, REPORTS.install_command, _extra(REPORTS)),
    Probe("docker packages", DOCKER.enables, DOCKER.install_command, _extra(DOCKER)),
    Probe("hosts packages", HOSTS.enables, HOSTS.install_command, _extra(HOSTS)),
    Probe(
        "Java",
        "Broker-J and Artemis nodes, Spark reports, Allure (full_gc needs a JDK)",
        "apt-get install openjdk-17-jdk-headless",
        _java,
    ),
    Probe(
        "Maven",
        "fetching Broker-J's and Artemis's distributions on first use",
        "apt-get install maven",
        lambda: _command("mvn", ("-v",)),
    ),
    Probe(
        "Broker-J distribution",
        "--target qpid-broker-j",
        "fetched on first use of --target qpid-broker-j (needs Maven)",
        _broker_j,
    ),
    Probe(
        "RabbitMQ",
        "--target rabbitmq (its nodes, their port mapper epmd, rabbitmqctl)",
        "apt-get install -y --no-install-recommends rabbitmq-server (the lab does it on first "
        "use as root on Debian)",
        _rabbitmq,
    ),
    Probe(
        "Docker engine",
        "--backend docker, the docker scenario tests",
        "as root on Debian the lab installs docker.io and starts dockerd on first use of "
        "--backend docker; otherwise apt-get install docker.io and start dockerd",
        _docker_engine,
    ),
    Probe(
        "mmdebstrap",
        "the containers' Debian base image (built locally, no registry)",
        "apt-get install mmdebstrap (the lab does it on first use as root)",
        lambda: _command("mmdebstrap"),
    ),
    Probe(
        "Chromium",
        "the tests that look at pages (docs, reports, Allure)",
        "apt-get install chromium (the tests do it on first use as root)",
        lambda: _command("chromium"),
    ),
    Probe(
        "Allure command line",
        "lab allure (HTML reports of a pytest session)",
        "installed with npm into .lab/tools/allure on first use of lab allure (needs npm)",
        _allure,
    ),
    Probe(
        "report class archive",
        "Spark reports starting 2-3 s sooner",
        "made by the first report (lab report, or a campaign's)",
        _class_archive,
    ),
    Probe(
        "root",
        "disk-full on local processes (tmpfs disks), node-link cuts between local JVMs and "
        "RabbitMQ nodes (packet filters), installing Docker, Chromium and RabbitMQ",
        "run the lab as root (sudo)",
        _root,
    ),
)
