"""The shell lines the lab runs on a host for the faults only hosts have, as pure functions.

Packet filters (`filter_lines`): a cut of the pair a–b drops, on a's host, what a sends to b
and what arrives from b (and the same on b's host); a one-way cut a→b drops what a sends to b
on a's host and what arrives from a on b's host. Every rule carries the session's comment.

    iptables -w -I OUTPUT -d <b>/32 -m comment --comment lab-hosts:<session> -j DROP

netem (`netem_lines`): on the node's interface, a two-band `prio` qdisc (handle 1ab:) sends
everything through `netem` except what the host's sshd sends (its source port), so the lab's
own control of the host — the heal included — never suffers the loss it injects:

    tc qdisc add dev eth0 root handle 1ab: prio bands 2 priomap 1 1 … 1
    tc qdisc add dev eth0 parent 1ab:2 handle 1ac: netem delay 100ms 20ms loss 5% …
    tc filter add dev eth0 parent 1ab: protocol ip prio 1 u32 match ip sport 22 0xffff flowid 1ab:1

Only the egress of the node's host is shaped: what the node sends (to its peers and clients).

The clock (`clock_spec`): libfaketime's timestamp-file text for an offset and a rate. A rate
set while the process runs would also move its clock by (rate − 1) × its age, so the offset
that goes with a new rate takes that back (`drift_offset`).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping

from lab.ground.netem import netem_args

__all__ = [
    "clock_spec",
    "drift_offset",
    "filter_lines",
    "netem_clear",
    "netem_lines",
]

ROOT_HANDLE = "1ab:"
_ROOT_QDISC = shlex.quote(r"s/^qdisc \([^ ]*\) \([^ ]*\) root.*/\1 \2/p")
NETEM_HANDLE = "1ac:"


def _rule(chain: str, flag: str, address: str, tag: str) -> str:
    return f"{chain} {flag} {address}/32 -m comment --comment {tag} -j DROP"


def filter_lines(
    outgoing: tuple[str, ...], incoming: tuple[str, ...], tag: str, enabled: bool, sudo: str = ""
) -> str:
    """One shell line: drop (enabled False) or allow again (True) what this host sends to
    `outgoing` and what it receives from `incoming`; idempotent either way."""
    rules = [_rule("OUTPUT", "-d", a, tag) for a in outgoing]
    rules += [_rule("INPUT", "-s", a, tag) for a in incoming]
    ipt = f"{sudo}iptables -w"
    if enabled:
        steps = [f"while {ipt} -C {r} 2>/dev/null; do {ipt} -D {r} || exit 1; done" for r in rules]
    else:
        steps = [f"{{ {ipt} -C {r} 2>/dev/null || {ipt} -I {r}; }}" for r in rules]
    return " && ".join(steps) if steps else "true"


def netem_lines(interface: str, params: Mapping[str, object], ssh_port: int, sudo: str = "") -> str:
    """One shell line: the lab's qdisc on `interface` with netem `params` (replacing the
    lab's own netem if there is one already; refusing a qdisc someone else put there)."""
    dev = shlex.quote(interface)
    tc = f"{sudo}tc"
    netem = " ".join(netem_args(params))
    bands = " ".join(["1"] * 16)
    return (
        f"root=$({tc} qdisc show dev {dev} | sed -n {_ROOT_QDISC}); "
        f'case "$root" in '
        f"'prio {ROOT_HANDLE}') "
        f"{tc} qdisc change dev {dev} parent {ROOT_HANDLE}2 handle {NETEM_HANDLE} netem {netem} ;; "
        f"''|*' 0:'|noqueue*) "
        f"{tc} qdisc add dev {dev} root handle {ROOT_HANDLE} prio bands 2 priomap {bands} && "
        f"{tc} qdisc add dev {dev} parent {ROOT_HANDLE}2 handle {NETEM_HANDLE} netem {netem} && "
        f"{tc} filter add dev {dev} parent {ROOT_HANDLE} protocol ip prio 1 u32 "
        f"match ip sport {int(ssh_port)} 0xffff flowid {ROOT_HANDLE}1 ;; "
        f'*) echo "{interface} has a queueing discipline of its own ($root): left alone" >&2; '
        "exit 3 ;; "
        "esac"
    )


def netem_clear(interface: str, sudo: str = "") -> str:
    """One shell line: the lab's qdisc removed (the interface's default comes back); nothing
    to do when it is not there."""
    dev = shlex.quote(interface)
    return (
        f"if {sudo}tc qdisc show dev {dev} | grep -q '^qdisc prio {ROOT_HANDLE} root'; "
        f"then {sudo}tc qdisc del dev {dev} root; fi"
    )


def clock_spec(offset_s: float, rate: float = 1.0) -> str:
    """libfaketime's text for a clock `offset_s` from the real one, running at `rate`."""
    text = f"{offset_s:+.3f}"
    return text if rate == 1.0 else f"{text} x{rate:.6g}"


def drift_offset(age_s: float, rate: float) -> float:
    """The offset that keeps a clock where it is when its process (running `age_s` seconds
    under libfaketime) starts running at `rate`: libfaketime scales the whole age."""
    return -age_s * (rate - 1.0)
