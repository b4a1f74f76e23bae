"""Faults on a link's Toxiproxy proxy: cut it, or add a toxic (latency, bandwidth, …)."""

from __future__ import annotations

from dataclasses import dataclass

from faults.abilities import as_linked, as_proxied
from lab.ground.errors import UsageError
from lab.ground.faultops import FaultOp
from lab.ground.topology import split_node_link

__all__ = ["TOXIC_FAULTS", "Cut", "Toxic"]


class Cut:
    """Cut the link: a proxy is disabled (open connections drop, new ones are refused); a
    direct node→node link in containers is filtered (packets dropped)."""

    kind = "cut"

    def preflight(self, cluster: object, op: FaultOp) -> None:
        if split_node_link(op.target) is not None:
            as_linked(cluster, self.kind).check_peer_links("cut")

    def apply(self, cluster: object, op: FaultOp) -> None:
        as_linked(cluster, self.kind).set_link(op.target, False)

    def heal(self, cluster: object, op: FaultOp) -> None:
        as_linked(cluster, self.kind).set_link(op.target, True)


@dataclass(frozen=True)
class Toxic:
    """A Toxiproxy toxic on a link, in one direction or both.

    `attributes` maps the fault's parameter names to the toxic's attributes and
    gives their defaults.
    """

    kind: str
    toxic_type: str
    attributes: tuple[tuple[str, str, int], ...]  # (param name, toxic attribute, default)

    def _streams(self, op: FaultOp) -> tuple[str, ...]:
        stream = str(op.params.get("stream", "both"))
        if stream == "both":
            return ("downstream", "upstream")
        if stream in ("downstream", "upstream"):
            return (stream,)
        raise UsageError(f"fault {op.id}: stream must be both, upstream or downstream")

    def preflight(self, cluster: object, op: FaultOp) -> None:
        if split_node_link(op.target) is not None:
            as_linked(cluster, self.kind).check_peer_links("slow")

    def apply(self, cluster: object, op: FaultOp) -> None:
        proxied = as_proxied(cluster, self.kind)
        link = proxied.require_proxy(op.target)
        attrs = {
            attr: int(op.params.get(param, default)) for param, attr, default in self.attributes
        }
        for stream in self._streams(op):
            proxied.proxy_client().add_toxic(
                link, f"{op.id}_{stream}", self.toxic_type, stream, attrs
            )

    def heal(self, cluster: object, op: FaultOp) -> None:
        proxied = as_proxied(cluster, self.kind)
        link = proxied.require_proxy(op.target)
        for stream in ("downstream", "upstream"):
            proxied.proxy_client().remove_toxic(link, f"{op.id}_{stream}")


TOXIC_FAULTS = (
    Toxic("latency", "latency", (("latency_ms", "latency", 500), ("jitter_ms", "jitter", 100))),
    Toxic("bandwidth", "bandwidth", (("rate_kbs", "rate", 10),)),
    Toxic("timeout", "timeout", (("timeout_ms", "timeout", 0),)),
    Toxic("reset_peer", "reset_peer", (("timeout_ms", "timeout", 0),)),
)
