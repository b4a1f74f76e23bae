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
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from lab.ground.errors import SetupError
from lab.ground.locks import host_lock
from lab.targets.maven import (
    cache_root,
    fetch_artifact,
    in_repository,
    make_cache,
    unpack_home,
)
from lab.targets.maven import home_archive as archive_of

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


def tarball_in_repository(version: str) -> Path:
    """Where `mvn dependency:get` puts the distribution of `version`."""
    return in_repository(ARTIFACT.format(version=version))


def ensure_distribution(version: str = VERSION, say: Say | None = None) -> Distribution:
    """The unpacked distribution, fetching and unpacking it the first time; idempotent."""
    say = say or _say_on_stderr
    target = cache_root() / "broker-j" / version
    home = target / "home"
    if (home / "lib").is_dir():
        return Distribution(version, home)
    make_cache(target.parent)
    with host_lock(f"broker-j-{version}"):
        if not (home / "lib").is_dir():
            tarball = fetch_artifact(ARTIFACT.format(version=version), "Broker-J", say, "45 MB")
            say(f"unpacking {tarball.name} into {target}")
            refusal = f"{tarball} is not a Broker-J {version} binary distribution"
            unpack_home(tarball, target, "*/*/bin/qpid-server", refusal)
    return Distribution(version, home)


def home_archive(dist: Distribution) -> Path:
    """The distribution's home as one .tar.gz beside it (what a host unpacks), made once."""
    return archive_of(dist.home, f"broker-j-archive-{dist.version}")
