"""The Apache Qpid Broker-J binary distribution, fetched with Maven on first use and cached.

    mvn dependency:get -Dartifact=org.apache.qpid:apache-qpid-broker-j:<version>:tar.gz:bin

puts the tarball in Maven's local repository; the lab unpacks it once into
`<repository>/.lab/cache/broker-j/<version>/` (or `$LAB_CACHE/broker-j/<version>/`)
under a machine-wide lock, through a temporary folder renamed into place, so a
half-unpacked distribution is never used. Berkeley DB JE, which the HA virtual
host node needs, is inside the tarball.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from lab.ground.errors import SetupError
from lab.ground.locks import host_lock
from lab.ground.paths import LAB_ROOT

__all__ = [
    "ARTIFACT",
    "VERSION",
    "Distribution",
    "cache_root",
    "ensure_distribution",
    "home_archive",
    "tarball_in_repository",
]

VERSION = "9.2.1"
ARTIFACT = "org.apache.qpid:apache-qpid-broker-j:{version}:tar.gz:bin"
_ROOT = LAB_ROOT
_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # Maven colours its output even in batch mode

Say = Callable[[str], None]


def _say_on_stderr(line: str) -> None:
    print(f"lab: broker-j: {line}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Distribution:
    """An unpacked Broker-J: `home` holds bin/ and lib/."""

    version: str
    home: Path

    @property
    def classpath(self) -> str:
        lib = self.home / "lib"
        folders = (lib, lib / "plugins", lib / "opt")
        return os.pathsep.join(str(folder / "*") for folder in folders)

    @property
    def bdb_je(self) -> Path:
        found = sorted((self.home / "lib").glob("je-*.jar"))
        if not found:
            raise SetupError(f"Broker-J {self.version} at {self.home} has no Berkeley DB JE jar")
        return found[0]


def cache_root() -> Path:
    configured = os.environ.get("LAB_CACHE")
    return Path(configured) if configured else _ROOT / ".lab" / "cache"


def _maven_repository() -> Path:
    configured = os.environ.get("MAVEN_REPO_LOCAL")
    return Path(configured) if configured else Path.home() / ".m2" / "repository"


def tarball_in_repository(version: str) -> Path:
    """Where `mvn dependency:get` puts the distribution of `version`."""
    return (
        _maven_repository()
        / "org/apache/qpid/apache-qpid-broker-j"
        / version
        / f"apache-qpid-broker-j-{version}-bin.tar.gz"
    )


def _fetch(version: str, say: Say) -> Path:
    tarball = tarball_in_repository(version)
    if tarball.is_file():
        return tarball
    mvn = shutil.which("mvn")
    if mvn is None:
        raise SetupError(
            "Broker-J is fetched with Maven on first use: install it (apt-get install maven)"
        )
    artifact = ARTIFACT.format(version=version)
    say(f"fetching {artifact} with Maven (once; about 45 MB)")
    command = [mvn, "-q", "-B", "dependency:get", f"-Dartifact={artifact}", "-Dtransitive=false"]
    if "MAVEN_REPO_LOCAL" in os.environ:
        command.append(f"-Dmaven.repo.local={_maven_repository()}")
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0 or not tarball.is_file():
        detail = _ANSI.sub("", done.stdout + done.stderr).strip().splitlines()
        reason = next((line for line in detail if "ERROR" in line), detail[-1] if detail else "")
        raise SetupError(f"cannot fetch {artifact} with Maven: {reason.strip()}")
    return tarball


def _make_cache(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        where = "LAB_CACHE" if os.environ.get("LAB_CACHE") else "the lab's cache"
        raise SetupError(
            f"{where} ({cache_root()}): cannot make {folder}: {exc.strerror}"
        ) from None


def _unpack(tarball: Path, target: Path, version: str) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".unpack-", dir=target.parent))
    try:
        with tarfile.open(tarball) as archive:
            archive.extractall(scratch, filter="data")
        homes = [p.parent.parent for p in scratch.glob("*/*/bin/qpid-server")]
        if len(homes) != 1:
            raise SetupError(f"{tarball} is not a Broker-J {version} binary distribution")
        homes[0].rename(scratch / "home")
        for child in list(scratch.iterdir()):
            if child.name != "home":
                shutil.rmtree(child)
        scratch.rename(target)
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise


def ensure_distribution(version: str = VERSION, say: Say | None = None) -> Distribution:
    """The unpacked distribution, fetching and unpacking it the first time; idempotent."""
    say = say or _say_on_stderr
    target = cache_root() / "broker-j" / version
    home = target / "home"
    if (home / "lib").is_dir():
        return Distribution(version, home)
    _make_cache(target.parent)
    with host_lock(f"broker-j-{version}"):
        if not (home / "lib").is_dir():
            tarball = _fetch(version, say)
            say(f"unpacking {tarball.name} into {target}")
            _unpack(tarball, target, version)
    return Distribution(version, home)


def home_archive(dist: Distribution) -> Path:
    """The distribution's home as one .tar.gz beside it (what a host unpacks), made once."""
    target = dist.home.parent / "home.tar.gz"
    if target.is_file():
        return target
    with host_lock(f"broker-j-archive-{dist.version}"):
        if not target.is_file():
            scratch = target.with_name(f".{target.name}.{os.getpid()}")
            with tarfile.open(scratch, "w:gz", compresslevel=1) as archive:
                for child in sorted(dist.home.iterdir()):
                    archive.add(child, arcname=child.name)
            os.replace(scratch, target)
    return target
