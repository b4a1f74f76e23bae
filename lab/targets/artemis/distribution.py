"""The Apache ActiveMQ Artemis binary distribution, fetched with Maven on first use and cached.

    mvn dependency:get -Dartifact=org.apache.activemq:apache-artemis:<version>:tar.gz:bin

puts the tarball (about 47 MB) in Maven's local repository; the lab unpacks it once into
`<repository>/.lab/cache/artemis/<version>/home` (or `$LAB_CACHE/artemis/<version>/home`)
under a machine-wide lock, through a temporary folder renamed into place, so a half-unpacked
distribution is never used. The version is VERSION, here and nowhere else.

A ZooKeeper server for the pluggable lock manager's tests runs from the distribution's own
`zookeeper-<v>.jar` (the client Artemis uses); its server side needs two more jars Artemis
does not ship, fetched the same way (`SERVER_EXTRAS`).
"""

from __future__ import annotations

import os
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
    "SERVER_EXTRAS",
    "VERSION",
    "Distribution",
    "ensure_distribution",
    "maven_artifact",
]

VERSION = "2.40.0"
ARTIFACT = "org.apache.activemq:apache-artemis:{version}:tar.gz:bin"
# What ZooKeeper's server needs beside zookeeper-<v>.jar and Artemis's lib (its metrics and
# its snapshot compression), at the versions ZooKeeper 3.9.3 is built with.
SERVER_EXTRAS = (
    "io.dropwizard.metrics:metrics-core:4.1.12.1",
    "org.xerial.snappy:snappy-java:1.1.10.5",
)

Say = Callable[[str], None]


def _say_on_stderr(line: str) -> None:
    print(f"lab: artemis: {line}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Distribution:
    """An unpacked Artemis: `home` holds bin/, lib/ and web/."""

    version: str
    home: Path

    @property
    def boot_jar(self) -> Path:
        return self.home / "lib" / "artemis-boot.jar"

    @property
    def lib(self) -> Path:
        return self.home / "lib"


def _cache_root() -> Path:
    configured = os.environ.get("LAB_CACHE")
    return Path(configured) if configured else LAB_ROOT / ".lab" / "cache"


def _maven_repository() -> Path:
    configured = os.environ.get("MAVEN_REPO_LOCAL")
    return Path(configured) if configured else Path.home() / ".m2" / "repository"


def _in_repository(coordinates: str) -> Path:
    """Where Maven keeps `group:artifact:version[:type[:classifier]]` (type jar by default)."""
    group, artifact, version, *rest = coordinates.split(":")
    kind = rest[0] if rest else "jar"
    classifier = f"-{rest[1]}" if len(rest) > 1 else ""
    folder = _maven_repository() / group.replace(".", "/") / artifact / version
    return folder / f"{artifact}-{version}{classifier}.{kind}"


def maven_artifact(coordinates: str, say: Say | None = None) -> Path:
    """The file of a Maven artifact, fetched into the local repository the first time."""
    found = _in_repository(coordinates)
    if found.is_file():
        return found
    mvn = shutil.which("mvn")
    if mvn is None:
        raise SetupError(
            "Artemis is fetched with Maven on first use: install it (apt-get install maven)"
        )
    (say or _say_on_stderr)(f"fetching {coordinates} with Maven (once)")
    command = [mvn, "-q", "-B", "dependency:get", f"-Dartifact={coordinates}", "-Dtransitive=false"]
    if "MAVEN_REPO_LOCAL" in os.environ:
        command.append(f"-Dmaven.repo.local={_maven_repository()}")
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0 or not found.is_file():
        detail = (done.stdout + done.stderr).strip().splitlines()
        reason = next((line for line in detail if "ERROR" in line), detail[-1] if detail else "")
        raise SetupError(f"cannot fetch {coordinates} with Maven: {reason.strip()}")
    return found


def _unpack(tarball: Path, target: Path, version: str) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".unpack-", dir=target.parent))
    try:
        with tarfile.open(tarball) as archive:
            archive.extractall(scratch, filter="data")
        homes = [p.parent.parent for p in scratch.glob("*/lib/artemis-boot.jar")]
        if len(homes) != 1:
            raise SetupError(f"{tarball} is not an Artemis {version} binary distribution")
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
    target = _cache_root() / "artemis" / version
    home = target / "home"
    if (home / "lib" / "artemis-boot.jar").is_file():
        return Distribution(version, home)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SetupError(f"cannot make the lab's cache {target.parent}: {exc.strerror}") from None
    with host_lock(f"artemis-{version}"):
        if not (home / "lib" / "artemis-boot.jar").is_file():
            tarball = maven_artifact(ARTIFACT.format(version=version), say)
            (say or _say_on_stderr)(f"unpacking {tarball.name} into {target}")
            _unpack(tarball, target, version)
    return Distribution(version, home)
