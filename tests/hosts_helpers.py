"""What the hosts tests share: a namespace rig for a test, and a look at a rig host."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from lab.backends.ssh.connection import probe
from lab.backends.ssh.hosts_file import Inventory, read_hosts_file
from lab.backends.ssh.rig import Rig, rig_refusal


def skip_without_rig() -> None:
    refusal = rig_refusal()
    if refusal is not None:
        pytest.skip(refusal)


@contextmanager
def rig_of(hosts: int, work: Path) -> Iterator[tuple[Rig, Path, Inventory]]:
    """A rig of `hosts` hosts for the block; down (and checked gone) afterwards."""
    skip_without_rig()
    rig = Rig(hosts, work, say=lambda line: None)
    hosts_file = rig.up()
    try:
        yield rig, hosts_file, read_hosts_file(hosts_file)
    finally:
        assert rig.down() == []


def on_host(inventory: Inventory, node: str, command: str) -> str:
    """What `command` prints on the host carrying `node` (a connection of its own)."""
    done = probe(inventory.host_for(node), command)
    assert done.status == 0, done.stderr
    return done.stdout


def netns_names() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True)
    return {line.split()[0] for line in out.stdout.splitlines() if line.strip()}


def links() -> set[str]:
    return set(os.listdir("/sys/class/net"))
