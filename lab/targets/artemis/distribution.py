"""The Apache ActiveMQ Artemis binary distribution, fetched with Maven on first use and cached.

    mvn dependency:get -Dartifact=org.apache.activemq:apache-artemis:<version>:tar.gz:bin

puts the tarball (about 47 MB) in Maven's local repository; the lab unpacks it once into
`<repository>/.lab/cache/artemis/<version>/home` (or `$LAB_CACHE/artemis/<version>/home`)
under a machine-wide lock, through a temporary folder renamed into place, so a half-unpacked
distribution is never used. The version is VERSION, here and nowhere else.

The lab's ZooKeeper (lab.targets.artemis.zookeeper) runs from the distribution's own
`zookeeper-<v>.jar` (the client Artemis uses); its server side needs two more jars Artemis
does not ship, fetched the same way (`SERVER_EXTRAS`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from lab.ground.locks import host_lock
from lab.targets.maven import cache_root, fetch_artifact, make_cache, unpack_home

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


def maven_artifact(coordinates: str, say: Say | None = None) -> Path:
    """The file of a Maven artifact, fetched into the local repository the first time."""
    return fetch_artifact(coordinates, "Artemis", say or _say_on_stderr)


def ensure_distribution(version: str = VERSION, say: Say | None = None) -> Distribution:
    """The unpacked distribution, fetching and unpacking it the first time; idempotent."""
    target = cache_root() / "artemis" / version
    home = target / "home"
    if (home / "lib" / "artemis-boot.jar").is_file():
        return Distribution(version, home)
    make_cache(target.parent)
    with host_lock(f"artemis-{version}"):
        if not (home / "lib" / "artemis-boot.jar").is_file():
            tarball = maven_artifact(ARTIFACT.format(version=version), say)
            (say or _say_on_stderr)(f"unpacking {tarball.name} into {target}")
            refusal = f"{tarball} is not an Artemis {version} binary distribution"
            unpack_home(tarball, target, "*/lib/artemis-boot.jar", refusal)
    return Distribution(version, home)
