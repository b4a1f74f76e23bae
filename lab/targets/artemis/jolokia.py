"""A broker's state over Artemis's own management API: its MBeans read through Jolokia (the
web console's `/console/jolokia`), with the management user's basic authentication.

One request reads, in bulk, the broker's `Active`, `Backup` and `ReplicaSync` attributes
(org.apache.activemq.artemis:broker="<name>") and every queue's `MessageCount`. The answer
maps onto the lab's words as docs/targets/artemis.md says:

    Artemis                                 node role   HA status (the C++ broker's words)
    active, its backup in sync              MASTER      active
    active, no backup in sync               MASTER      recovering
    passive backup, in sync with a primary  REPLICA     ready
    passive backup, not in sync             WAITING     joining (Artemis does not tell a
                                                        backup copying its primary's journal
                                                        from one waiting to pair)
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import requests

from lab.ground.errors import ClusterError
from lab.targets.management import (
    Credentials,
    ManagementRefused,
    ManagementTimeout,
    ManagementUnreachable,
)

__all__ = ["BrokerState", "JolokiaClient", "state_from_answers"]

DOMAIN = "org.apache.activemq.artemis"
BROKER_ATTRIBUTES = ("Active", "Backup", "ReplicaSync", "Started", "HAPolicy")
QUEUES = (
    f"{DOMAIN}:broker=*,component=addresses,address=*,subcomponent=queues,routing-type=*,queue=*"
)
_QUEUE_NAME = re.compile(r'queue="([^"]*)"')


@dataclass(frozen=True)
class BrokerState:
    active: bool
    backup: bool
    replica_sync: bool
    ha_policy: str = ""
    queue_depths: Mapping[str, int] = field(default_factory=dict)

    @property
    def role(self) -> str:
        if self.active:
            return "MASTER"
        return "REPLICA" if self.backup and self.replica_sync else "WAITING"

    @property
    def ha_status(self) -> str:
        if self.active:
            return "active" if self.replica_sync else "recovering"
        return "ready" if self.backup and self.replica_sync else "joining"


def state_from_answers(answers: Any) -> BrokerState | None:
    """The state in Jolokia's answer to the bulk read; None when the broker's MBean is not
    (yet) there (a JVM starting)."""
    if not isinstance(answers, list) or not answers:
        return None
    broker = answers[0] if isinstance(answers[0], dict) else {}
    if broker.get("status") != 200:
        return None
    values = broker.get("value") or {}
    attributes: Mapping[str, Any] = next(iter(values.values()), {}) if values else {}
    if not attributes or "Active" not in attributes:
        return None
    depths: dict[str, int] = {}
    queues = answers[1] if len(answers) > 1 and isinstance(answers[1], dict) else {}
    if queues.get("status") == 200:
        for mbean, found in (queues.get("value") or {}).items():
            name = _QUEUE_NAME.search(str(mbean))
            if name and isinstance(found, dict) and isinstance(found.get("MessageCount"), int):
                depths[name.group(1)] = int(found["MessageCount"])
    return BrokerState(
        active=bool(attributes.get("Active")),
        backup=bool(attributes.get("Backup")),
        replica_sync=bool(attributes.get("ReplicaSync")),
        ha_policy=str(attributes.get("HAPolicy", "")),
        queue_depths=depths,
    )


class JolokiaClient:
    """Reads one broker's state; the same errors as the lab's management client."""

    def __init__(
        self, base_url: str, node: str, credentials: Credentials, timeout_s: float = 5.0
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.node = node
        self.credentials = credentials
        self.timeout_s = timeout_s

    @property
    def url(self) -> str:
        return f"{self.base_url}/console/jolokia/"

    def _post(self, body: list[dict[str, Any]]) -> Any:
        try:
            reply = requests.post(
                self.url,
                json=body,
                auth=(self.credentials.user, self.credentials.password),
                headers={"Origin": self.base_url},
                timeout=self.timeout_s,
            )
        except requests.Timeout as exc:
            raise ManagementTimeout(f"Jolokia of {self.node} at {self.url}: {exc}") from exc
        except requests.ConnectionError as exc:
            raise ManagementUnreachable(f"Jolokia of {self.node} at {self.url}: {exc}") from exc
        except requests.RequestException as exc:
            raise ClusterError(f"Jolokia of {self.node} at {self.url}: {exc}") from exc
        if not reply.ok:
            raise ManagementRefused(reply.status_code, reply.text.strip()[:200] or reply.reason)
        try:
            return reply.json()
        except ValueError as exc:
            raise ClusterError(f"Jolokia of {self.node}: not JSON: {reply.text[:200]}") from exc

    def state(self) -> BrokerState | None:
        """The broker's state now; None while its MBean is not registered."""
        broker = f"{DOMAIN}:broker=*"
        return state_from_answers(
            self._post(
                [
                    {"type": "read", "mbean": broker, "attribute": list(BROKER_ATTRIBUTES)},
                    {"type": "read", "mbean": QUEUES, "attribute": ["MessageCount"]},
                ]
            )
        )

    def ha(self) -> dict[str, Any]:
        """`lab ha status`'s answer (the management client's `ha`): the HA status in the C++
        broker's words, and what Artemis said."""
        state = self.state()
        if state is None:
            return {"status": "starting"}
        return {
            "status": state.ha_status,
            "role": state.role,
            "active": state.active,
            "backup": state.backup,
            "replica_sync": state.replica_sync,
            "ha_policy": state.ha_policy,
        }
