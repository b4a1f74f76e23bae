"""docker-compose.yml's profiles in tests: bring one up under its own project and label,
reach its nodes' management APIs and its Toxiproxy, and write the Broker-J profile's
static node configurations.

    .venv/bin/python tests/compose_helpers.py    rewrites containers/compose/bj-n*.json
                                                 from lab.targets.brokerj (after a change
                                                 there; test_compose_profiles checks them)
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script
    sys.path.insert(0, str(ROOT))

from lab.backends.docker.engine import (  # noqa: E402
    can_install,
    engine_answers,
    ensure_commands,
    ensure_engine,
)
from lab.backends.docker.images import build_images  # noqa: E402
from lab.backends.docker.labels import SESSION  # noqa: E402
from lab.backends.docker.node_config import container_node_plan  # noqa: E402
from lab.backends.docker.reaper import leftovers  # noqa: E402
from lab.ground.errors import SetupError  # noqa: E402
from lab.ground.nodes import ClusterPlan  # noqa: E402
from lab.ground.ports import free_ports  # noqa: E402
from lab.ground.spec import Durability, GroupSettings  # noqa: E402
from lab.pytest_plugin import skip_unless_ci  # noqa: E402

COMPOSE_FILE = ROOT / "docker-compose.yml"
NAMES = ("n1", "n2", "n3")
AUTH = ("admin", "admin")

# The Broker-J profile: nodes bj1…bj3 (Broker-J names n1…n3) in group lab-bj. Node n<i>
# advertises n<i>-replication:700<i>; that name is an alias of bj-toxiproxy, whose proxy
# to_n<i> forwards to the same port on the node, except in the node's own container,
# where /etc/hosts gives it the container's address (JE checks that a node's address is
# its own). The node
# listens on every interface (JE's bindInaddrAny), so every connection made to a node's
# replication address from another node runs through one proxy, `to_<node>`.
BROKERJ_GROUP = "lab-bj"
BROKERJ_ADDRESSES = {name: f"{name}-replication:{7001 + i}" for i, name in enumerate(NAMES)}
BROKERJ_EXTRA_CONTEXT = {"je.rep.bindInaddrAny": "true"}


def say(line: str) -> None:
    print(line, flush=True)


def brokerj_launches(node_dir: Path) -> dict[str, tuple[dict[str, Any], tuple[str, ...]]]:
    """Per node: its initial configuration (as the Broker-J target writes it for a
    container, with the profile's addresses) and the command the target runs."""
    from lab.targets.brokerj.target import BrokerJTarget

    target = BrokerJTarget()
    nodes = tuple(container_node_plan(name, node_dir / name) for name in NAMES)
    cluster = ClusterPlan(BROKERJ_GROUP, nodes, Durability(), settings=GroupSettings())
    found = {}
    for plan in nodes:
        plan.node_dir.mkdir(parents=True, exist_ok=True)
        launch = target.container_launch(cluster, plan, dict(BROKERJ_ADDRESSES))
        config = json.loads(launch.config)
        for vhn in config["virtualhostnodes"]:
            vhn["context"] = {**vhn["context"], **BROKERJ_EXTRA_CONTEXT}
        found[plan.name] = (config, launch.command)
    return found


def brokerj_config_path(name: str) -> Path:
    return ROOT / "containers" / "compose" / f"bj-{name}.json"


def write_brokerj_configs() -> None:
    with tempfile.TemporaryDirectory(prefix="lab-compose-") as tmp:
        for name, (config, _) in brokerj_launches(Path(tmp)).items():
            brokerj_config_path(name).write_text(json.dumps(config, indent=2) + "\n")


# -- a profile, up and down ------------------------------------------------------------------


def compose(project: str, env: Mapping[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["docker-compose", "-p", project, "-f", str(COMPOSE_FILE), *args],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def compose_ready(targets: Sequence[str] = ("broker_ref",)) -> Any:
    """A client for an engine, docker-compose on PATH and the lab's images for `targets`;
    skips (outside CI) where the lab may not set them up."""
    if not engine_answers() and not can_install():
        skip_unless_ci("no Docker engine answers, and the lab installs one only as root on Debian")
    try:
        ensure_commands({"docker-compose": "docker-compose"}, say)
    except SetupError as exc:
        skip_unless_ci(str(exc))
    engine = ensure_engine(say)
    if "qpid-broker-j" in targets:  # its image holds the distribution, fetched with Maven
        from lab.targets.brokerj.distribution import ensure_distribution

        try:
            ensure_distribution(say=say)
        except SetupError as exc:
            skip_unless_ci(f"Broker-J could not be fetched: {exc}")
    build_images(say, targets)
    return engine


@dataclass(frozen=True)
class Profile:
    """A profile brought up: its project, label, environment and host ports by variable."""

    project: str
    label: str
    env: dict[str, str]
    ports: dict[str, int]

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return compose(self.project, self.env, *args)


@contextmanager
def profile_up(
    engine: Any, kind: str, variables: Sequence[str], profile: str | None, services: Sequence[str]
) -> Iterator[Profile]:
    """Bring `services` up under a fresh project and label, every port variable on a free
    port; on the way out, `down -v` and check nothing with the label is left."""
    label = f"test-{kind}-{uuid.uuid4().hex[:8]}"
    ports = dict(zip(variables, free_ports(len(variables)), strict=True))
    env = {"LAB_SESSION": label, **{k: str(v) for k, v in ports.items()}}
    selected = ("--profile", profile) if profile else ()
    running = Profile(f"lab{label.replace('-', '')}", label, env, ports)
    started = time.monotonic()
    try:
        up = running.run(*selected, "up", "-d", *services)
        say(f"{kind}: up in {time.monotonic() - started:.1f} s")
        assert up.returncode == 0, up.stderr
        yield running
    finally:
        stopping = time.monotonic()
        down = running.run(*selected, "down", "-v", "--remove-orphans")
        say(f"{kind}: down in {time.monotonic() - stopping:.1f} s")
    assert down.returncode == 0, down.stderr
    left = leftovers(engine, f"{SESSION}={label}")
    assert left.empty, f"left behind: {left}"


# -- what the tests look at ------------------------------------------------------------------


def get_json(port: int, path: str) -> Any:
    """GET a management API path; None when the node does not answer."""
    try:
        return requests.get(f"http://127.0.0.1:{port}{path}", auth=AUTH, timeout=2).json()
    except (OSError, ValueError):
        return None


def roles(management: Mapping[str, int]) -> dict[str, str | None]:
    """Each node's role (MASTER, REPLICA, …) as its virtual host node reports it."""
    found: dict[str, str | None] = {}
    for name, port in management.items():
        body = get_json(port, f"/api/latest/virtualhostnode/{name}")
        found[name] = body.get("role") if isinstance(body, dict) else None
    return found


def one_master(seen: Mapping[str, str | None]) -> bool:
    masters = [n for n, r in seen.items() if r == "MASTER"]
    return len(masters) == 1 and all(r in ("MASTER", "REPLICA") for r in seen.values())


def wait_for(
    look: Callable[[], Any], test: Callable[[Any], bool], what: str, timeout_s: float = 90.0
) -> Any:
    deadline = time.monotonic() + timeout_s
    seen = look()
    while not test(seen):
        assert time.monotonic() < deadline, f"{what}: never happened; last seen {seen}"
        time.sleep(0.3)
        seen = look()
    return seen


def set_proxy(api_port: int, proxy: str, enabled: bool) -> None:
    """Enable or disable one of the profile's Toxiproxy proxies (a disabled proxy closes
    its listener and its connections)."""
    url = f"http://127.0.0.1:{api_port}/proxies/{proxy}"
    answer = requests.post(url, json={"enabled": enabled}, timeout=5)
    assert answer.status_code == 200, answer.text
    assert answer.json()["enabled"] is enabled


def closed(port: int) -> bool:
    """True when nothing speaks AMQP on 127.0.0.1:port: the connection is refused, or
    (Docker's port forwarder accepts it) closed without an answer to the AMQP header."""
    try:
        sock = socket.create_connection(("127.0.0.1", port), timeout=3)
    except ConnectionRefusedError:
        return True
    try:
        sock.sendall(b"AMQP\x00\x01\x00\x00")
        return sock.recv(8) == b""
    except (ConnectionResetError, BrokenPipeError):
        return True
    finally:
        sock.close()


def retry(action: Callable[[], Any], what: str, timeout_s: float = 30.0) -> Any:
    """`action()`'s result once it stops raising."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return action()
        except Exception as exc:
            if time.monotonic() > deadline:
                raise AssertionError(f"{what}: still failing after {timeout_s:.0f} s") from exc
            time.sleep(0.5)


if __name__ == "__main__":
    write_brokerj_configs()
