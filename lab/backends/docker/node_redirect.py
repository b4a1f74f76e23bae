"""Sending what a node dials at a peer's announced address to their pair's proxy, inside the
node's network namespace (for a target whose nodes dial each peer at the one address that
peer announces: lab.targets.protocol.DialsPeersByName).

Such a node announces `<toxiproxy>:<ANNOUNCED_BASE + i>` (i: its number, from 1), a port on
Toxiproxy's address where nothing listens; in each other node's namespace, entered from the
host with nsenter (the image needs no tools and no capabilities), one rule sends it to the
proxy of that pair:

    iptables -t nat -A OUTPUT -p tcp -d <toxiproxy> --dport <ANNOUNCED_BASE + i>
             -m comment --comment lab-pair -j DNAT --to-destination <toxiproxy>:<pair's port>

A node whose rules are not in place yet (its container just started) is refused at the
announced address and dials again: no connection ever goes around the proxies. The rules live
in the container's namespace: a container started again gets them again.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Mapping

from lab.ground.errors import ClusterError, SetupError

__all__ = ["ANNOUNCED_BASE", "COMMENT", "redirect"]

ANNOUNCED_BASE = 12000
COMMENT = "lab-pair"


def _rule(toxiproxy: str, announced: int, pair_port: int) -> list[str]:
    return [
        "OUTPUT",
        "-p",
        "tcp",
        "-d",
        toxiproxy,
        "--dport",
        str(announced),
        "-m",
        "comment",
        "--comment",
        COMMENT,
        "-j",
        "DNAT",
        "--to-destination",
        f"{toxiproxy}:{pair_port}",
    ]


def _iptables(pid: int, action: str, rule: list[str]) -> subprocess.CompletedProcess[str]:
    for tool in ("nsenter", "iptables"):
        if shutil.which(tool) is None:
            raise SetupError(f"routing a node's peer links through their proxies needs {tool}")
    command = ["nsenter", "-t", str(pid), "-n", "iptables", "-w", "-t", "nat", action, *rule]
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=15, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ClusterError(f"{' '.join(command)}: {exc}") from exc


def redirect(pid: int, toxiproxy: str, pairs: Mapping[int, int]) -> None:
    """In the namespace of the node whose main process is `pid`: each announced port of
    `pairs` to its pair's proxy port on `toxiproxy`; a rule already there is kept."""
    for announced, pair_port in sorted(pairs.items()):
        rule = _rule(toxiproxy, announced, pair_port)
        if _iptables(pid, "-C", rule).returncode == 0:
            continue
        done = _iptables(pid, "-A", rule)
        if done.returncode != 0:
            raise ClusterError(
                f"cannot send port {announced} to the proxy at {toxiproxy}:{pair_port}: "
                f"{done.stderr.strip()}"
            )
