"""A client for a node's management API, modelled on Broker-J's REST API.

    GET  /api/latest/virtualhostnode/<node>              the node: role, priority, …
    POST /api/latest/virtualhostnode/<node>  {attrs}     change priority, designatedPrimary,
                                                         quorumOverride; role=MASTER transfers
    GET  /api/latest/remotereplicationnode/<node>        the other nodes as this node sees them
    DELETE /api/latest/remotereplicationnode/<node>/<other>
                                                         remove <other> from the group (on the
                                                         master; <other> stopped first)
    GET  /api/latest/ha/<node>                           an active-passive broker's HA status
    POST /api/latest/ha/<node>   {"action": …}           promote; replicate a queue

broker_ref and Broker-J answer the same paths, so operator faults work on both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import requests

from lab.ground.errors import ClusterError

__all__ = [
    "Credentials",
    "ManagementClient",
    "ManagementRefused",
    "ManagementTimeout",
    "ManagementUnreachable",
]


@dataclass(frozen=True)
class Credentials:
    user: str = "admin"
    password: str = "admin"


class ManagementRefused(ClusterError):
    """The node answered and refused the change (bad value, wrong password)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status


class ManagementTimeout(ClusterError):
    """The node took the request but did not answer in time (hung, frozen)."""


class ManagementUnreachable(ClusterError):
    """Nothing listens at the node's management address (not up yet, or gone)."""


class ManagementClient:
    def __init__(
        self, base_url: str, node: str, credentials: Credentials, timeout_s: float = 5.0
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.node = node
        self.credentials = credentials
        self.timeout_s = timeout_s

    def _url(self, kind: str, child: str | None = None) -> str:
        own = f"{self.base_url}/api/latest/{kind}/{self.node}"
        return own if child is None else f"{own}/{child}"

    def _request(self, method: str, url: str, body: dict[str, Any] | None = None) -> Any:
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
                message = str(reply.json().get("errorMessage", reply.text))
            except ValueError:
                message = reply.text.strip() or reply.reason
            raise ManagementRefused(reply.status_code, message)
        if not reply.content:
            return None
        try:
            return reply.json()
        except ValueError:
            return None

    def node_attributes(self) -> dict[str, Any]:
        body = self._request("GET", self._url("virtualhostnode"))
        if isinstance(body, list):  # Broker-J answers a list for a GET by name
            body = body[0] if body else {}
        return dict(body or {})

    def set_attributes(self, **attributes: Any) -> None:
        self._request("POST", self._url("virtualhostnode"), attributes)

    def remote_nodes(self) -> list[dict[str, Any]]:
        body = self._request("GET", self._url("remotereplicationnode"))
        return list(body or [])

    def remove_node(self, name: str) -> None:
        """Remove node `name` from the group for good (Broker-J's delete of a remote
        replication node), asked of the master. A refusal is a ManagementRefused with the
        answer's status, 404 when `name` is not a member (or no longer one). broker_ref
        answers 409 when this node is not the master or `name` is still active; Broker-J
        9.2 answers 422 when this node is not the master, and removes an active node too
        (JE's ReplicationGroupAdmin.removeMember: the node drops to WAITING), so the lab
        stops the node first on both."""
        self._request("DELETE", self._url("remotereplicationnode", name))

    def ha(self) -> dict[str, Any]:
        """The broker's HA status (qpid-ha status): `status`, its primary, ready backups."""
        return dict(self._request("GET", self._url("ha")) or {})

    def ha_action(self, **request: Any) -> None:
        """`promote` (the cluster manager's), or `replicate` with `queue` and `level`."""
        self._request("POST", self._url("ha"), request)
