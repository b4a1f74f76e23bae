"""What the lab finds out about a host before it puts anything there: its Python, its Java,
its libfaketime, tc and iptables, whether it may act as root, the interface facing the lab.

One shell line per host (`FACTS`), answered as `key=value` lines; `HostFacts.refusal` says in
one line what a host lacks for what a run asks of it (a JDK for Broker-J, the same Python as
the lab's for broker_ref's packages, a libfaketime that can leave the monotonic clock alone …).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from lab.backends.ssh.filter_netem import filter_netem_refusal
from lab.backends.ssh.hosts_file import Host

__all__ = ["FACTS", "HostFacts", "faketime_keeps_monotonic"]

FACTS = r"""
echo "python=$({python} -c '
import platform, sys
print("%d.%d %s" % (sys.version_info[0], sys.version_info[1], platform.machine()))' 2>/dev/null)"
echo "java=$(command -v java)"
echo "jcmd=$(command -v jcmd)"
echo "faketime=$(ls /usr/lib/*/faketime/libfaketime.so.1 2>/dev/null | head -n 1)"
echo "faketime_version=$(dpkg-query -W -f '${{Version}}' libfaketime 2>/dev/null)"
echo "tc=$(command -v tc || ls /usr/sbin/tc /sbin/tc 2>/dev/null | head -n 1)"
echo "iptables=$(command -v iptables || ls /usr/sbin/iptables 2>/dev/null | head -n 1)"
echo "apt=$(command -v apt-get)"
echo "uid=$(id -u)"
echo "sudo=$(sudo -n true 2>/dev/null && echo yes)"
lab=${{SSH_CONNECTION%% *}}
echo "interface=$(ip -o route get "$lab" 2>/dev/null | sed -n 's/.* dev \([^ ]*\).*/\1/p')"
echo "dir=$(mkdir -p {dir} 2>/dev/null && [ -w {dir} ] && echo writable)"
s=$(id -u | grep -qx 0 || echo "sudo -n")
echo "netem=$($s unshare -n tc qdisc add dev lo root netem delay 1ms 2>/dev/null && echo yes)"
echo "filters=$($s unshare -n sh -c 'iptables -A OUTPUT -m statistic --mode random \
  --probability 0.5 -j DROP && iptables -t mangle -A POSTROUTING -j TEE --gateway 127.0.0.2' \
  2>/dev/null && echo yes)"
"""


def faketime_keeps_monotonic(version: str) -> bool:
    """Whether libfaketime `version` (Debian's, e.g. "0.9.10-2.1") is 0.9.11 or newer. 0.9.10
    (Debian 12's) cannot leave a process's monotonic clock alone (it translates every absolute
    sleep on CLOCK_MONOTONIC as if it were faked: Python's time.sleep fails with EINVAL, a
    JVM's timed waits hang), and does not intercept sem_clockwait, with which Python's timed
    lock waits then hang whichever way; a JVM runs under it with its monotonic clock faked
    too. Both fixed in 0.9.11."""
    found = re.match(r"^(?:\d+:)?(\d+)\.(\d+)\.(\d+)", version)
    if found is None:
        return False
    return tuple(int(g) for g in found.groups()) >= (0, 9, 11)


@dataclass(frozen=True)
class HostFacts:
    host: Host
    values: dict[str, str]

    @staticmethod
    def parse(host: Host, output: str) -> HostFacts:
        values = {}
        for line in output.splitlines():
            key, sep, value = line.partition("=")
            if sep:
                values[key.strip()] = value.strip()
        return HostFacts(host, values)

    def has(self, key: str) -> bool:
        return bool(self.values.get(key))

    @property
    def root(self) -> bool:
        return self.values.get("uid") == "0" or self.values.get("sudo") == "yes"

    @property
    def interface(self) -> str | None:
        return self.host.interface or self.values.get("interface") or None

    def where(self) -> str:
        return f"host {self.host.name} ({self.host.address})"

    def refusal(self, needs: tuple[str, ...], python: str | None = None) -> str | None:
        """Why this host cannot carry a node that needs `needs` (one line), or None.
        `python`: the Python (`3.11 x86_64`) broker_ref's packages were built for."""
        if self.values.get("dir") != "writable":
            return f"{self.where()}: cannot write to {self.host.dir}"
        if "python" in needs:
            found = self.values.get("python")
            if not found:
                return (
                    f"{self.where()}: no Python at {self.host.python!r} (the hosts file's python)"
                )
            if python is not None and found != python:
                return (
                    f"{self.where()}: its Python is {found}; broker_ref's packages are this "
                    f"machine's, built for {python}: point the hosts file's python at one"
                )
        if "java" in needs and not self.has("java"):
            return f"{self.where()}: Broker-J needs a Java runtime on the host (a JDK 17)"
        return None

    def tool_refusal(self, tool: str, package: str, what: str) -> str | None:
        """Why `what` (needing command/library `tool`, Debian package `package`) cannot be
        done on this host: neither present nor installable by the lab (root and apt-get)."""
        if self.has(tool):
            return None
        if self.root and self.has("apt"):
            return None  # the lab installs it at start
        return f"{self.where()}: {what} needs {package} there (install it, or give the lab root)"

    def clock_refusal(self, monotonic: bool, python: bool) -> str | None:
        """Why this host cannot run a node (a Python one when `python`) under libfaketime
        with its monotonic clock moved too (`monotonic`) or left alone."""
        missing = self.tool_refusal("faketime", "libfaketime", "a clock fault")
        if missing is not None:
            return missing
        version = self.values.get("faketime_version", "")
        if python and not faketime_keeps_monotonic(version):
            shown = version or "of unknown version"
            return (
                f"{self.where()}: under its libfaketime {shown} a Python node's timed waits "
                "hang (it does not intercept sem_clockwait; 0.9.11 does): clock faults need "
                "libfaketime 0.9.11 or newer there, or a JVM target"
            )
        if not monotonic and not faketime_keeps_monotonic(version):
            shown = version or "of unknown version"
            return (
                f"{self.where()}: its libfaketime {shown} cannot leave a process's monotonic "
                "clock alone (fixed in 0.9.11): give the clock fault monotonic = true, or "
                "install libfaketime 0.9.11 or newer there"
            )
        return None

    def netem_refusal(self, params: Mapping[str, object]) -> str | None:
        if not self.root:
            return f"{self.where()}: netem needs root on the host (user root, or sudo -n)"
        if self.interface is None:
            return f"{self.where()}: no interface found for netem; name it (interface = …)"
        if self.has("netem"):
            return self.tool_refusal("tc", "iproute2", "netem")
        refusal = filter_netem_refusal(params)
        if refusal is None and not self.has("filters"):
            refusal = "its kernel has neither netem nor the packet filters' statistic and TEE"
        return None if refusal is None else f"{self.where()}: {refusal}"

    def filter_refusal(self) -> str | None:
        if not self.root:
            return f"{self.where()}: cutting links needs root on the host (user root, or sudo -n)"
        return self.tool_refusal("iptables", "iptables", "cutting node links")
