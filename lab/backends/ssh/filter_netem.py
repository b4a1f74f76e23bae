"""netem's loss and duplication by packet filter, for a host whose kernel has no netem.

Some kernels are built without `sch_netem` (this lab's own test machine's is one). What a
packet filter can make of netem is made with it, on what the host sends out of the node's
interface, the host's sshd exempt (its source port), every rule carrying the session's comment:

    loss_pct       iptables -A OUTPUT -o eth0 -p tcp ! --sport 22 -m statistic --mode random
                     --probability 0.05 -m comment --comment lab-hosts:<session> -j DROP
                   (and the same for what is not TCP)
    duplicate_pct  iptables -t mangle -A POSTROUTING -o eth0 -d <peer> -p tcp ! --sport 22
                     -m statistic … -j TEE --gateway <peer>    (a copy to the same peer)

Delay, jitter, reordering and corruption have no packet-filter form: on such a host they are
refused before anything starts (`filter_netem_refusal`).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping

from lab.ground.netem import netem_args

__all__ = ["FILTERABLE", "filter_netem_lines", "filter_netem_refusal"]

FILTERABLE = frozenset({"loss_pct", "duplicate_pct"})


def filter_netem_refusal(params: Mapping[str, object]) -> str | None:
    """Why `params` cannot be made by packet filter (None: they can)."""
    netem_args(params)
    asked = {k for k, v in params.items() if float(str(v)) != 0}
    beyond = sorted(asked - FILTERABLE)
    if beyond:
        return (
            f"its kernel has no netem (sch_netem): only {' and '.join(sorted(FILTERABLE))} can "
            f"be made there, by packet filter, not {', '.join(beyond)}"
        )
    return None


def _rules(
    interface: str, params: Mapping[str, object], peers: tuple[str, ...], tag: str, ssh_port: int
) -> list[tuple[str, str]]:
    """(table, rule) for `params` on `interface`."""
    dev = shlex.quote(interface)
    mark = f"-m comment --comment {tag}"
    found: list[tuple[str, str]] = []
    loss = float(str(params.get("loss_pct", 0))) / 100
    if loss:
        chance = f"-m statistic --mode random --probability {loss:.4f}"
        found.append(
            ("filter", f"OUTPUT -o {dev} -p tcp ! --sport {ssh_port} {chance} {mark} -j DROP")
        )
        found.append(("filter", f"OUTPUT -o {dev} ! -p tcp {chance} {mark} -j DROP"))
    dup = float(str(params.get("duplicate_pct", 0))) / 100
    if dup:
        chance = f"-m statistic --mode random --probability {dup:.4f}"
        for peer in peers:
            match = f"-o {dev} -d {peer}/32 -p tcp ! --sport {ssh_port} {chance} {mark}"
            found.append(("mangle", f"POSTROUTING {match} -j TEE --gateway {peer}"))
    return found


def filter_netem_lines(
    interface: str,
    params: Mapping[str, object],
    peers: tuple[str, ...],
    tag: str,
    ssh_port: int,
    add: bool,
    sudo: str = "",
) -> str:
    """One shell line adding (`add`) or removing the rules for `params`; idempotent."""
    steps = []
    for table, rule in _rules(interface, params, peers, tag, ssh_port):
        ipt = f"{sudo}iptables -w -t {table}"
        if add:
            steps.append(f"{{ {ipt} -C {rule} 2>/dev/null || {ipt} -A {rule}; }}")
        else:
            steps.append(f"while {ipt} -C {rule} 2>/dev/null; do {ipt} -D {rule} || exit 1; done")
    return " && ".join(steps) if steps else "true"
