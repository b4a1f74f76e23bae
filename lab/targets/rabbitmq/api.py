"""RabbitMQ's management HTTP API, as the lab uses it (the `rabbitmq_management` plugin, on
127.0.0.1 or a container's published port, with the node's management user):

    GET  /api/queues/%2F/<queue>?disable_stats=true   the queue as this node sees it: its
                                                      leader (quorum: `leader`, `members`,
                                                      `online`) or master (classic:
                                                      `node`, `slave_nodes`,
                                                      `synchronised_slave_nodes`)
    GET  /api/nodes                                   the cluster's nodes, running or not,
                                                      and each one's `partitions`
    PUT  /api/policies/%2F/<name>                     the mirroring policy
    PUT  /api/queues/%2F/<queue>                      declare the queue (durable, its type)

A node that is not up yet refuses the connection (ManagementUnreachable); a node that is
up but cannot reach the queue's leader may answer late (ManagementTimeout).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import requests

from lab.ground.errors import ClusterError
from lab.targets.management import (
    Credentials,
    ManagementRefused,
    ManagementTimeout,
    ManagementUnreachable,
)

__all__ = ["QueueView", "RabbitApi", "role_of"]

VHOST = quote("/", safe="")
NOT_FOUND = 404


@dataclass(frozen=True)
class QueueView:
    """A queue as one node's management API shows it: the node holding its leader (quorum)
    or master (mirrored), its other members (or mirrors) and those among them in sync
    (a quorum queue's online members; a mirrored queue's synchronised mirrors)."""

    leader: str | None
    members: tuple[str, ...] = ()
    in_sync: tuple[str, ...] = ()

    @staticmethod
    def of(body: dict[str, Any]) -> QueueView:
        if body.get("type") == "quorum":
            return QueueView(
                body.get("leader") or None,
                tuple(body.get("members") or ()),
                tuple(body.get("online") or ()),
            )
        master = body.get("node") or None
        mirrors = tuple(body.get("slave_nodes") or ())
        synced = tuple(body.get("synchronised_slave_nodes") or ())
        return QueueView(master, (*(() if master is None else (master,)), *mirrors), synced)

    def by_node(self) -> QueueView:
        """The same view by the lab's node names (an Erlang name is `<node>@<host>`)."""

        def short(name: str) -> str:
            return name.split("@", 1)[0]

        return QueueView(
            None if self.leader is None else short(self.leader),
            tuple(short(n) for n in self.members),
            tuple(short(n) for n in self.in_sync),
        )


def role_of(view: QueueView | None, me: str) -> tuple[str, str | None]:
    """The lab's role of the node named `me` (its Erlang name) by a queue view, and its
    replica's state: MASTER (it holds the leader or master), REPLICA `ready` (a member in
    sync), REPLICA `catchup` (a member, not in sync: an unsynchronised mirror, or a quorum
    member its leader does not count online), WAITING (no queue, or no member here)."""
    if view is None:
        return "WAITING", None
    if view.leader == me:
        return "MASTER", "active"
    if me in view.members:
        return "REPLICA", "ready" if me in view.in_sync else "catchup"
    return "WAITING", None


class RabbitApi:
    def __init__(self, base_url: str, node: str, credentials: Credentials, timeout_s: float):
        self.base_url = base_url.rstrip("/")
        self.node = node
        self.credentials = credentials
        self.timeout_s = timeout_s

    def _request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        url = f"{self.base_url}/api/{path}"
        try:
            reply = requests.request(
                method,
                url,
                json=body,
                auth=(self.credentials.user, self.credentials.password),
                timeout=self.timeout_s,
            )
        except requests.Timeout as exc:
            raise ManagementTimeout(f"management API of {self.node} at {url}: {exc}") from exc
        except requests.ConnectionError as exc:
            raise ManagementUnreachable(f"management API of {self.node} at {url}: {exc}") from exc
        except requests.RequestException as exc:
            raise ClusterError(f"management API of {self.node} at {url}: {exc}") from exc
        if not reply.ok:
            try:
                message = str(reply.json().get("reason", reply.text))
            except ValueError:
                message = reply.text.strip() or reply.reason
            raise ManagementRefused(reply.status_code, message)
        try:
            return reply.json() if reply.content else None
        except ValueError:
            return None

    def queue(self, name: str) -> QueueView | None:
        """The queue as this node sees it; None when it has no such queue."""
        try:
            body = self._request("GET", f"queues/{VHOST}/{quote(name, safe='')}?disable_stats=true")
        except ManagementRefused as exc:
            if exc.status == NOT_FOUND:
                return None
            raise
        return QueueView.of(dict(body or {}))

    def nodes(self) -> list[dict[str, Any]]:
        return list(self._request("GET", "nodes?columns=name,running,partitions") or [])

    def running_nodes(self) -> set[str]:
        return {str(n["name"]) for n in self.nodes() if n.get("running")}

    def partitions(self) -> dict[str, list[str]]:
        """Each running node's partitions as it reports them (the peers it found it was cut
        from, as `rabbitmqctl cluster_status` lists them); empty lists when whole."""
        return {
            str(n["name"]): [str(p) for p in n.get("partitions") or []]
            for n in self.nodes()
            if n.get("running")
        }

    def put_policy(self, name: str, pattern: str, definition: dict[str, Any]) -> None:
        body = {"pattern": pattern, "definition": definition, "apply-to": "queues"}
        self._request("PUT", f"policies/{VHOST}/{quote(name, safe='')}", body)

    def declare_queue(self, name: str, arguments: dict[str, Any]) -> None:
        body = {"durable": True, "auto_delete": False, "arguments": arguments}
        self._request("PUT", f"queues/{VHOST}/{quote(name, safe='')}", body)
