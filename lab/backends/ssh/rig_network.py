"""The rig's network: a bridge the lab owns, and one network namespace per host joined to it
by a veth pair, on addresses that reach nothing but that bridge.

    lab's machine ── lr<id>b (198.18.K.1/24) ──┬── veth ── netns h1: eth0 198.18.K.10/24
                                               ├── veth ── netns h2: eth0 198.18.K.11/24
                                               └── …

The addresses come from 198.18.0.0/15, the block set aside for benchmarking network devices
(RFC 2544): nothing on the Internet is there. A /24 of it is taken only when no route and no
address of this machine touches it (`subnet_refusal`), and once the bridge is up every host
address must route through the bridge and nowhere else (`route_refusal`), and a namespace must
have no way out but its own /24 (no default route: a node cannot reach another address, even
where this machine forwards packets). Any doubt and the rig is not made (fail closed).

Everything made is named after the lab process that made it (`lr<pid hex>g<k>…` links,
`lab-rig-<pid>.<k>-h<i>` namespaces), so the reaper finds what a killed lab left.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lab.ground.errors import SetupError

__all__ = [
    "RIG_BLOCK",
    "RigNames",
    "ip_json",
    "route_refusal",
    "run",
    "subnet_refusal",
]

RIG_BLOCK = ipaddress.ip_network("198.18.0.0/15")
LINK_NAME = re.compile(r"^lr([0-9a-f]+)g(\d+)[bh]\d*$")
NETNS_NAME = re.compile(r"^lab-rig-(\d+)\.(\d+)-h\d+$")


def run(command: Sequence[str], *, check: bool = True, timeout_s: float = 30.0) -> str:
    """Run a command of the rig's; its stdout, or a SetupError with its stderr."""
    try:
        done = subprocess.run(
            list(command), capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SetupError(f"{' '.join(command)}: {exc}") from exc
    if check and done.returncode != 0:
        raise SetupError(f"{' '.join(command)}: {done.stderr.strip() or done.returncode}")
    return done.stdout


def ip_json(*args: str, netns: str | None = None) -> list[dict[str, Any]]:
    """`ip -j ARGS` (in `netns`), parsed."""
    prefix = ["ip", "netns", "exec", netns] if netns else []
    out = run([*prefix, "ip", "-j", *args]).strip()
    parsed = json.loads(out) if out else []
    return list(parsed) if isinstance(parsed, list) else []


def _route_network(route: dict[str, Any]) -> ipaddress.IPv4Network | None:
    dst = str(route.get("dst", ""))
    if dst in ("", "default") or ":" in dst:
        return None
    with contextlib.suppress(ValueError):
        return ipaddress.ip_network(dst if "/" in dst else f"{dst}/32", strict=False)  # type: ignore[return-value]
    return None


def subnet_refusal(
    subnet: ipaddress.IPv4Network,
    routes: list[dict[str, Any]],
    addresses: list[dict[str, Any]],
) -> str | None:
    """Why `subnet` cannot be the rig's (a route or an address of this machine already
    touches it: someone else's network, or another rig's); None when it is untouched.
    `routes`: `ip -j route show table all`; `addresses`: `ip -j addr show`."""
    if not subnet.subnet_of(RIG_BLOCK):  # type: ignore[arg-type]
        return f"{subnet} is outside {RIG_BLOCK}, the only block the rig takes addresses from"
    for route in routes:
        network = _route_network(route)
        if network is not None and network.overlaps(subnet):
            where = f"{route.get('dst')} dev {route.get('dev')}"
            return f"{subnet}: a route of this machine covers it ({where})"
    for link in addresses:
        for info in link.get("addr_info", []):
            local = str(info.get("local", ""))
            if info.get("family") == "inet" and ipaddress.ip_address(local) in subnet:
                return f"{subnet}: {link.get('ifname')} has the address {local}"
    return None


def route_refusal(address: str, bridge: str, answer: list[dict[str, Any]]) -> str | None:
    """Why traffic to a rig host's `address` might leave by another way than `bridge`
    (`answer`: `ip -j route get ADDRESS`); None when it goes through the bridge."""
    if not answer:
        return f"{address}: no route (ip route get said nothing)"
    dev = answer[0].get("dev")
    gateway = answer[0].get("gateway")
    if dev != bridge or gateway:
        via = f" via {gateway}" if gateway else ""
        return f"{address} would go out by {dev}{via}, not the rig's bridge {bridge}"
    return None


@dataclass(frozen=True)
class RigNames:
    """The names of one rig's bridge, veths and namespaces, from its owner (pid, serial)."""

    pid: int
    serial: int

    @property
    def tag(self) -> str:
        return f"{self.pid}.{self.serial}"

    @property
    def bridge(self) -> str:
        return f"lr{self.pid:x}g{self.serial}b"

    def veth(self, index: int) -> str:
        """The lab's end of host `index`'s veth pair (its other end is the host's eth0)."""
        return f"lr{self.pid:x}g{self.serial}h{index}"

    def netns(self, index: int) -> str:
        return f"lab-rig-{self.tag}-h{index}"

    @staticmethod
    def owner_of_link(name: str) -> tuple[int, int] | None:
        found = LINK_NAME.match(name)
        return None if found is None else (int(found.group(1), 16), int(found.group(2)))

    @staticmethod
    def owner_of_netns(name: str) -> tuple[int, int] | None:
        found = NETNS_NAME.match(name)
        return None if found is None else (int(found.group(1)), int(found.group(2)))
