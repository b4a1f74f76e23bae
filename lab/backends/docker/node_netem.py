"""netem on a node's container interface, from the host (nsenter into the node's network
namespace, as node_filter does: the image needs no tools and no capabilities).

Where the kernel has netem, `tc qdisc replace dev <if> root netem …` on the interface the node
has on the run's internal network (what it sends its peers and Toxiproxy); the heal deletes it.
Where it has not, loss and duplication by packet filter, inside the container, as on hosts
(lab.backends.ssh.filter_netem); the rest is refused before anything starts. Everything lives in
the container's namespace and ends with it.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
from collections.abc import Mapping

from lab.backends.ssh.filter_netem import filter_netem_lines, filter_netem_refusal
from lab.ground.errors import ClusterError
from lab.ground.netem import netem_args

__all__ = ["TAG", "kernel_has_netem", "netem_refusal", "shape", "unshape"]

TAG = "lab-netem"


def kernel_has_netem() -> bool:
    """Whether this machine's kernel has netem (tried in a throwaway network namespace)."""
    if shutil.which("unshare") is None or shutil.which("tc") is None:
        return False
    probe = ["unshare", "-n", "tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"]
    return subprocess.run(probe, capture_output=True, check=False).returncode == 0


def netem_refusal(params: Mapping[str, object]) -> str | None:
    for tool in ("nsenter", "tc", "iptables"):
        if shutil.which(tool) is None:
            return f"netem in a container needs {tool} on this machine"
    if kernel_has_netem():
        netem_args(params)
        return None
    return filter_netem_refusal(params)


def _in_node(pid: int, line: str) -> subprocess.CompletedProcess[str]:
    command = ["nsenter", "-t", str(pid), "-n", "sh", "-c", line]
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ClusterError(f"netem in the node's namespace: {exc}") from exc


def _interface(pid: int, address: str) -> str:
    done = _in_node(pid, f"ip -o -4 addr show to {shlex.quote(address)}")
    words = done.stdout.split()
    if done.returncode != 0 or len(words) < 2:
        raise ClusterError(f"no interface with {address} in the node's namespace")
    return words[1]


def shape(pid: int, address: str, params: Mapping[str, object], peers: tuple[str, ...]) -> str:
    """Shape what the node sends on its internal interface; how (`tc netem` or `iptables`)."""
    interface = _interface(pid, address)
    if kernel_has_netem():
        line = f"tc qdisc replace dev {interface} root netem {' '.join(netem_args(params))}"
        how = "tc netem"
    else:
        line = filter_netem_lines(interface, params, peers, TAG, 0, True)
        how = "iptables"
    done = _in_node(pid, line)
    if done.returncode != 0:
        raise ClusterError(f"netem on {interface}: {done.stderr.strip()}")
    return how


def unshape(pid: int, address: str, params: Mapping[str, object], peers: tuple[str, ...]) -> None:
    """Undo `shape`; nothing to do when nothing is there."""
    interface = _interface(pid, address)
    if kernel_has_netem():
        line = f"tc qdisc show dev {interface} | grep -q netem && tc qdisc del dev {interface} root"
        _in_node(pid, f"{line} || true")
        return
    done = _in_node(pid, filter_netem_lines(interface, params, peers, TAG, 0, False))
    if done.returncode != 0:
        raise ClusterError(f"netem off {interface}: {done.stderr.strip()}")
