"""The hosts file: which machines carry which nodes, and how the lab reaches them over SSH.

    networks = ["10.20.0.0/24"]     # required: the only addresses the lab may reach
    user = "root"                   # defaults for every host (each may say otherwise)
    key = "~/.ssh/id_ed25519"       # a private key (relative paths: from this file's folder)
    known_hosts = "~/.ssh/known_hosts"
    dir = "/var/tmp/lab"            # the folder the lab may use on each host
    port = 22
    python = "python3"              # the host's Python (broker_ref's nodes)

    [[host]]
    name = "db1"                    # default: host1, host2 …
    address = "10.20.0.11"          # an IPv4 address or a name (resolved once, here)
    node = "n1"                     # the node it carries (one per host)
    interface = "eth0"              # optional: where netem goes (default: the one facing
                                    # the other hosts)

Read once, at the entry point, and checked whole before anything starts: an unknown key, a
wrong type, a missing key file, an address outside `networks`, two hosts for one node … is one
line naming the file and the field (exit 2). `networks` is the user's statement of which
addresses are theirs: the lab never addresses anything else (its SSH connections, its
Toxiproxy upstreams and its packet filters name only these hosts). The lab cannot know a
machine is yours; it can hold itself to what you declared, and refuses what cannot be a
declaration of a few machines (a network wider than /8, loopback, this machine).
"""

from __future__ import annotations

import ipaddress
import re
import socket
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from lab.ground.errors import InputError, UsageError
from lab.ground.files import read_user_document

__all__ = ["Host", "Inventory", "read_hosts_file"]

MAX_BYTES = 1 << 20
_TOP_KEYS = {"networks", "user", "key", "known_hosts", "dir", "port", "python", "rig", "host"}
_HOST_KEYS = {"name", "address", "node", "user", "key", "known_hosts", "dir", "port", "python"}
_HOST_KEYS |= {"interface"}
_NODE = re.compile(r"^n[1-9]\d{0,2}$")
_WORD = re.compile(r"^[A-Za-z0-9_.][A-Za-z0-9_.-]{0,63}$")
_SYSTEM_DIRS = {"/", "/bin", "/boot", "/dev", "/etc", "/lib", "/proc", "/sbin", "/sys", "/usr"}


@dataclass(frozen=True)
class Host:
    """One machine and the node it carries; `address` is the IPv4 address it resolved to."""

    name: str
    address: str
    node: str
    port: int
    user: str
    key: Path
    known_hosts: Path
    dir: str
    python: str
    interface: str | None = None

    @property
    def privileged(self) -> str:
        """What to put before a command that needs root on this host."""
        return "" if self.user == "root" else "sudo -n "


@dataclass(frozen=True)
class Inventory:
    source: Path
    networks: tuple[ipaddress.IPv4Network, ...]
    hosts: tuple[Host, ...]
    rig: str | None = None  # the namespace rig that wrote the file (lab.backends.ssh.rig)

    def host_for(self, node: str) -> Host:
        for host in self.hosts:
            if host.node == node:
                return host
        carried = ", ".join(h.node for h in self.hosts)
        raise UsageError(f"{self.source}: no host carries node {node} (hosts carry {carried})")

    def check_nodes(self, nodes: tuple[str, ...]) -> None:
        """Every node of the topology has its host (a UsageError naming the first without)."""
        for node in nodes:
            self.host_for(node)

    def allows(self, address: str) -> bool:
        ip = ipaddress.ip_address(address)
        return any(ip in network for network in self.networks)


def read_hosts_file(path: Path) -> Inventory:
    """Parse and check a hosts file (see the module's note); an InputError naming the file and
    the field (or line): what any user's file gets (lab.ground.files), then the fields."""
    raw = read_user_document(path, "hosts file", kind="toml", limit=MAX_BYTES)
    return _Reader(path).inventory(raw)


class _Reader:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.base = path.resolve().parent

    def fail(self, where: str, why: str) -> InputError:
        return InputError(f"{self.path}: {where}: {why}")

    def inventory(self, raw: dict[str, Any]) -> Inventory:
        unknown = sorted(set(raw) - _TOP_KEYS)
        if unknown:
            raise self.fail(unknown[0], f"unknown key (known: {', '.join(sorted(_TOP_KEYS))})")
        networks = self.networks(raw.get("networks"))
        hosts_raw = raw.get("host")
        if not isinstance(hosts_raw, list) or not hosts_raw:
            raise self.fail("host", "give at least one [[host]] table")
        hosts = tuple(self.host(i, h, raw, networks) for i, h in enumerate(hosts_raw, 1))
        self.distinct(hosts)
        rig = raw.get("rig")
        if rig is not None and not (isinstance(rig, str) and _WORD.match(rig)):
            raise self.fail("rig", "a rig's tag (written by the lab's namespace rig)")
        return Inventory(self.path, networks, hosts, rig)

    def networks(self, value: object) -> tuple[ipaddress.IPv4Network, ...]:
        if not isinstance(value, list) or not value:
            raise self.fail(
                "networks", 'required: the networks your hosts are on, e.g. ["10.20.0.0/24"]'
            )
        found = []
        for item in value:
            try:
                network = ipaddress.ip_network(str(item), strict=False)
            except ValueError:
                raise self.fail("networks", f"{item!r} is not a network (a.b.c.d/n)") from None
            if not isinstance(network, ipaddress.IPv4Network):
                raise self.fail("networks", f"{item}: IPv4 networks only")
            if network.prefixlen < 8:
                raise self.fail(
                    "networks", f"{item} is wider than /8: declare your hosts' networks"
                )
            if network.overlaps(ipaddress.IPv4Network("127.0.0.0/8")):
                raise self.fail("networks", f"{item}: loopback is this machine, not a host")
            found.append(network)
        return tuple(found)

    def host(
        self,
        index: int,
        raw: object,
        top: dict[str, Any],
        networks: tuple[ipaddress.IPv4Network, ...],
    ) -> Host:
        where = f"host {index}"
        if not isinstance(raw, dict):
            raise self.fail(where, "must be a [[host]] table")
        unknown = sorted(set(raw) - _HOST_KEYS)
        if unknown:
            raise self.fail(
                f"{where}.{unknown[0]}", f"unknown key (known: {', '.join(sorted(_HOST_KEYS))})"
            )

        def field(name: str, default: object = None) -> object:
            return raw.get(name, top.get(name, default))

        name = self.word(f"{where}.name", raw.get("name", f"host{index}"))
        where = f"host {index} ({name})"
        node = raw.get("node")
        if not isinstance(node, str) or not _NODE.match(node):
            raise self.fail(f"{where}.node", "required: the node it carries (n1, n2 …)")
        port = field("port", 22)
        if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
            raise self.fail(f"{where}.port", f"{port!r} is not a TCP port")
        interface = raw.get("interface")
        if interface is not None:
            interface = self.word(f"{where}.interface", interface)
        return Host(
            name=name,
            address=self.address(f"{where}.address", raw.get("address"), networks),
            node=node,
            port=port,
            user=self.word(f"{where}.user", field("user", "root")),
            key=self.file(f"{where}.key", field("key")),
            known_hosts=self.file(
                f"{where}.known_hosts", field("known_hosts", "~/.ssh/known_hosts")
            ),
            dir=self.folder(f"{where}.dir", field("dir", "/var/tmp/lab")),
            python=self.command(f"{where}.python", field("python", "python3")),
            interface=interface,
        )

    def word(self, where: str, value: object) -> str:
        if not isinstance(value, str) or not _WORD.match(value):
            raise self.fail(where, f"{value!r}: letters, digits, '.', '_' and '-' only")
        return value

    def command(self, where: str, value: object) -> str:
        if not isinstance(value, str) or not re.match(r"^[A-Za-z0-9_./+-]{1,200}$", value):
            raise self.fail(where, f"{value!r} is not a command name or path")
        return value

    def file(self, where: str, value: object) -> Path:
        if not isinstance(value, str) or not value:
            raise self.fail(where, "required: a file's path")
        path = Path(value).expanduser()
        path = path if path.is_absolute() else self.base / path
        if not path.is_file():
            raise self.fail(where, f"{path} is not a file")
        return path

    def folder(self, where: str, value: object) -> str:
        if not isinstance(value, str) or not value.startswith("/") or "\n" in value:
            raise self.fail(where, f"{value!r}: an absolute folder on the host")
        folder = PurePosixPath(value)
        if ".." in folder.parts or str(folder) in _SYSTEM_DIRS or len(folder.parts) < 2:
            raise self.fail(where, f"{value}: not a folder the lab may fill and empty")
        if not re.match(r"^[A-Za-z0-9_./-]+$", value):
            raise self.fail(where, f"{value}: letters, digits, '.', '_', '-' and '/' only")
        return str(folder)

    def address(
        self, where: str, value: object, networks: tuple[ipaddress.IPv4Network, ...]
    ) -> str:
        if not isinstance(value, str) or not value:
            raise self.fail(where, "required: the host's IPv4 address or name")
        try:
            resolved = str(ipaddress.IPv4Address(value))
        except ValueError:
            try:
                resolved = str(socket.getaddrinfo(value, None, socket.AF_INET)[0][4][0])
            except (OSError, IndexError):
                raise self.fail(where, f"{value!r} does not resolve to an IPv4 address") from None
        ip = ipaddress.IPv4Address(resolved)
        if ip.is_loopback or ip.is_unspecified or ip.is_multicast:
            raise self.fail(where, f"{value} ({resolved}) is not another machine")
        if not any(ip in n for n in networks):
            declared = ", ".join(str(n) for n in networks)
            raise self.fail(
                where, f"{value} ({resolved}) is outside the declared networks ({declared})"
            )
        return resolved

    def distinct(self, hosts: tuple[Host, ...]) -> None:
        seen_nodes: dict[str, str] = {}
        seen_names: set[str] = set()
        seen_places: dict[tuple[str, int], str] = {}
        for host in hosts:
            if host.name in seen_names:
                raise self.fail(f"host {host.name}", "two hosts have this name")
            if host.node in seen_nodes:
                raise self.fail(
                    f"host {host.name}.node",
                    f"{host.node} is carried by {seen_nodes[host.node]} already",
                )
            place = (host.address, host.port)
            if place in seen_places:
                raise self.fail(
                    f"host {host.name}.address",
                    f"{host.address}:{host.port} is host {seen_places[place]} already "
                    "(one node per host)",
                )
            seen_names.add(host.name)
            seen_nodes[host.node] = host.name
            seen_places[place] = host.name
