"""A ZooKeeper the lab runs for a run: a standalone server on 127.0.0.1 from the Artemis
distribution's own `zookeeper-<v>.jar` (the client Artemis's lock manager uses), with the two
jars its server side needs beside it (SERVER_EXTRAS, fetched with Maven once).

On hosts (`zookeeper=lab`) it is a lab service (lab.targets.on_hosts.LabService): every broker
reaches it through its host's SSH connection, so the lock manager stands on a machine of its
own, outside every cut between the hosts. The tests of the lock manager on local processes run
the same server.
"""

from __future__ import annotations

from pathlib import Path

from lab.ground.ports import HOST
from lab.targets.artemis.distribution import (
    SERVER_EXTRAS,
    VERSION,
    ensure_distribution,
    maven_artifact,
)
from lab.targets.on_hosts import LabService

__all__ = ["SERVICE", "TICK_MS", "lab_zookeeper", "zookeeper_command"]

SERVICE = "zookeeper"  # its name among a run's lab services, and the setting's value `lab`
MAIN = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
# Sessions from 2 ticks to 240 ticks: 1 s to 120 s, the range the setting session-ms takes
# (ZooKeeper would otherwise narrow what a broker asks for to 2-20 ticks).
TICK_MS = 500


def zookeeper_command(folder: Path, port: int, version: str = VERSION) -> list[str]:
    """Write the server's configuration in `folder` (its data there too) and give its command
    line: serving on 127.0.0.1:`port` only, without its admin web server."""
    home = ensure_distribution(version).home
    extras = [str(maven_artifact(coordinates)) for coordinates in SERVER_EXTRAS]
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "zoo.cfg"
    config.write_text(
        f"tickTime={TICK_MS}\ndataDir={folder / 'data'}\nclientPort={port}\n"
        f"clientPortAddress={HOST}\nminSessionTimeout={2 * TICK_MS}\n"
        f"maxSessionTimeout={240 * TICK_MS}\nadmin.enableServer=false\n"
        "4lw.commands.whitelist=srvr\n",
        encoding="utf-8",
    )
    classpath = ":".join([f"{home}/lib/*", *extras])
    return ["java", "-Xmx128m", "-XX:+UseSerialGC", "-cp", classpath, MAIN, str(config)]


def lab_zookeeper(version: str = VERSION) -> LabService:
    """The lab's ZooKeeper as a lab service of a run on hosts."""
    return LabService(SERVICE, lambda folder, port: zookeeper_command(folder, port, version))
