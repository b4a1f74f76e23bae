"""`lab ha`: an active-passive cluster's brokers, as `qpid-ha` shows and changes them.

    lab ha status [--broker NODE|URL] [--all] [--expect primary|joining|catchup|ready|…]
    lab ha promote NODE --cluster-manager
    lab ha replicate QUEUE LEVEL [--broker NODE|URL]

A broker is named by its node (of the cluster `lab up` started, from its state file) or by
its management URL. `status --expect` exits 0 when the broker's status is the one expected
(`primary`: recovering or active) and 1 otherwise, printing nothing, as qpid-ha does;
`--all` prints every broker of the cluster. `promote` is a "cluster manager only" command,
refused without --cluster-manager. `replicate` sets a queue's replication level on the
primary (declaring the queue when it does not exist). An Artemis cluster's brokers are read
through Jolokia (their states in the C++ broker's words, lab.targets.artemis.jolokia); they
take neither promote nor replicate.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from lab.cli.common import DEFAULT_STATE_DIR, Commands
from lab.ground.cluster_settings import REPLICATE_LEVELS
from lab.ground.errors import ClusterError, InputError, UsageError

if TYPE_CHECKING:
    from lab.targets.artemis.jolokia import JolokiaClient
    from lab.targets.management import ManagementClient

    Client = ManagementClient | JolokiaClient

__all__ = ["register"]

PRIMARY = ("recovering", "active")
EXPECTABLE = ("primary", "joining", "catchup", "ready", "recovering", "active", "standalone")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> Commands:
    """Add `lab ha` to `sub`."""
    ha = sub.add_parser("ha", help="an active-passive cluster's brokers, as qpid-ha shows them")
    ha.add_argument(
        "--state-dir",
        type=Path,
        default=DEFAULT_STATE_DIR,
        metavar="DIR",
        help="where `lab up` recorded the cluster (default .lab)",
    )
    actions = ha.add_subparsers(dest="ha_action", required=True, parser_class=type(ha))
    status = actions.add_parser("status", help="a broker's HA status")
    status.add_argument("--broker", help="a node of `lab up`'s cluster, or a management URL")
    status.add_argument("--all", action="store_true", help="every broker of the cluster")
    status.add_argument("--expect", choices=EXPECTABLE, help="exit 0 if so, 1 if not")
    promote = actions.add_parser("promote", help="make a broker the primary (manager only)")
    promote.add_argument("broker", help="a node of `lab up`'s cluster, or a management URL")
    promote.add_argument(
        "--cluster-manager",
        action="store_true",
        help="acknowledge that promote is for a cluster manager: misused, it makes two primaries",
    )
    replicate = actions.add_parser("replicate", help="set a queue's replication level")
    replicate.add_argument("queue", help="the queue's name")
    replicate.add_argument(
        "level", choices=REPLICATE_LEVELS, help=f"one of {', '.join(REPLICATE_LEVELS)}"
    )
    replicate.add_argument("--broker", help="the primary (default: the one that says it is)")
    return {"ha": _cmd_ha}


def _state(state_dir: Path) -> dict[str, Any]:
    state = state_dir / "cluster.json"
    if not state.is_file():
        raise UsageError(f"no cluster is up ({state} is missing): name a broker by its URL")
    try:
        recorded = json.loads(state.read_text(encoding="utf-8"))
        if not isinstance(recorded, dict):
            raise TypeError("not a JSON object")
        return recorded
    except (OSError, ValueError, TypeError) as exc:
        raise InputError(f"{state}: cannot read the cluster state: {exc}") from exc


def _cluster(state_dir: Path) -> dict[str, str]:
    """Node → management URL of the cluster `lab up` started."""
    try:
        return {str(n["name"]): str(n["management"]) for n in _state(state_dir)["nodes"]}
    except (KeyError, TypeError) as exc:
        state = state_dir / "cluster.json"
        raise InputError(f"{state}: cannot read the cluster state: {exc}") from None


def _target(state_dir: Path) -> str:
    """The target of the cluster `lab up` started (broker_ref when none is up)."""
    if not (state_dir / "cluster.json").is_file():
        return "broker_ref"
    return str(_state(state_dir).get("target", "broker_ref"))


def _at(url: str, node: str, target: str) -> Client:
    """A node's management client (its HTTP library is loaded only by `lab ha`)."""
    from lab.targets.management import Credentials

    if target == "artemis":
        from lab.targets.artemis.jolokia import JolokiaClient

        return JolokiaClient(url, node, Credentials())
    from lab.targets.management import ManagementClient

    return ManagementClient(url, node, Credentials())


def _client(broker: str, state_dir: Path) -> Client:
    target = _target(state_dir)
    if "://" in broker:
        url = urlsplit(broker)
        node = url.path.strip("/").rsplit("/", 1)[-1] or ""
        if not node:
            raise UsageError(f"{broker}: give the node's name too, e.g. http://127.0.0.1:8081/n1")
        return _at(f"{url.scheme}://{url.netloc}", node, target)
    nodes = _cluster(state_dir)
    if broker not in nodes:
        raise UsageError(f"no broker {broker!r} in the cluster (brokers: {', '.join(nodes)})")
    return _at(nodes[broker], broker, target)


def _status(client: Client) -> str:
    try:
        return str(client.ha().get("status"))
    except ClusterError as exc:
        return f"{type(exc).__name__}: {exc}"


def _acting(client: Client) -> ManagementClient:
    from lab.targets.artemis.jolokia import JolokiaClient

    if isinstance(client, JolokiaClient):
        raise UsageError(
            "Artemis's brokers decide themselves which one is active: there is no promote, "
            "and every durable message is replicated (no per-queue level)"
        )
    return client


def _cmd_ha(args: argparse.Namespace) -> int:
    state_dir: Path = args.state_dir
    if args.ha_action == "status":
        if args.all:
            target = _target(state_dir)
            for node, url in _cluster(state_dir).items():
                print(f"{node} {url} {_status(_at(url, node, target))}")
            return 0
        broker = args.broker or _primary(state_dir) or next(iter(_cluster(state_dir)))
        status = _status(_client(broker, state_dir))
        if args.expect is not None:
            wanted = PRIMARY if args.expect == "primary" else (args.expect,)
            return 0 if status in wanted else 1
        print(status)
        return 0
    if args.ha_action == "promote":
        if not args.cluster_manager:
            raise UsageError(
                "promote is a cluster manager only command: promoting a broker while another "
                "is primary makes two primaries, and the cluster loses data; add "
                "--cluster-manager if you are one"
            )
        _acting(_client(args.broker, state_dir)).ha_action(action="promote")
        return 0
    broker = args.broker or _primary(state_dir)
    if broker is None:
        raise ClusterError("no broker of the cluster says it is the primary")
    client = _acting(_client(broker, state_dir))
    client.ha_action(action="replicate", queue=args.queue, level=args.level)
    return 0


def _primary(state_dir: Path) -> str | None:
    target = _target(state_dir)
    for node, url in _cluster(state_dir).items():
        if _status(_at(url, node, target)) in PRIMARY:
            return node
    return None
