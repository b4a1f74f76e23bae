"""What the Docker cluster shows of itself (what `lab up` prints and records: nodes with their
addresses, the containers' processes and names) and what it runs in a node's container (a
full garbage collection)."""

from __future__ import annotations

import contextlib
from typing import Any

from docker.errors import APIError, NotFound
from docker.models.containers import Container

from lab.backends.docker.node_container import NodeContainer
from lab.backends.managed import ManagedCluster
from lab.ground.errors import ClusterError
from lab.ground.ports import HOST
from lab.targets.protocol import JvmTarget

__all__ = ["TOXIPROXY", "ContainerRecords"]

TOXIPROXY = "toxiproxy"


class ContainerRecords(ManagedCluster[NodeContainer]):
    """Mixed into DockerCluster, which names its containers and starts Toxiproxy's."""

    toxiproxy_container: Container | None

    def _name(self, part: str) -> str:
        raise NotImplementedError

    def client_urls(self) -> list[str]:
        raise NotImplementedError

    def _run_full_gc(self, name: str, target: JvmTarget) -> str:
        """docker exec in the node's container."""
        node = self.node(name)
        command = target.full_gc_command(None)
        if node.container is None:
            raise ClusterError(f"node {name} has no container")
        try:
            code, output = node.container.exec_run(command)
        except APIError as exc:
            raise ClusterError(f"{' '.join(command)} in {self._name(name)}: {exc}") from exc
        text = output.decode("utf-8", "replace").strip() if output else ""
        if code != 0:
            raise ClusterError(f"{' '.join(command)} in {self._name(name)}: {text}")
        return text

    def describe(self) -> dict[str, Any]:
        """What `lab up` prints and saves: nodes with their client and management addresses."""
        assert self.plan is not None
        urls = self.client_urls()
        return {
            "nodes": [
                {
                    "name": plan.name,
                    "amqp": url,
                    "management": f"http://{HOST}:{plan.management_port}",
                    "container": self._name(plan.name),
                }
                for plan, url in zip(self.plan.nodes, urls, strict=True)
            ]
        }

    def pids(self) -> dict[str, int]:
        """The containers' main processes as the engine's host sees them."""
        found = {name: pid for name, node in self.nodes.items() if (pid := node.pid) is not None}
        if self.toxiproxy_container is not None:
            with contextlib.suppress(APIError, NotFound):
                self.toxiproxy_container.reload()
                pid = self.toxiproxy_container.attrs.get("State", {}).get("Pid")
                if isinstance(pid, int) and pid > 0:
                    found[TOXIPROXY] = pid
        return found

    def containers(self) -> dict[str, str]:
        """Node (and `toxiproxy`) -> container name."""
        found = {name: self._name(name) for name in self.nodes}
        if self.toxiproxy_container is not None:
            found[TOXIPROXY] = self._name(TOXIPROXY)
        return found
