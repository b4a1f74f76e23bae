"""Taking a rig down: every process in its namespaces killed, the namespaces, veths and
bridge deleted, its forwarding rule and stage folder removed (by its record, so the reaper
can do the same for a rig whose lab was killed)."""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lab.backends.ssh.rig_network import run
from lab.ground.errors import SetupError

__all__ = ["remove_rig"]


def remove_rig(body: Mapping[str, Any], tag: str) -> list[str]:
    """Remove one rig's processes, namespaces, links, rule and stage folder, as recorded in
    `body`; the problems (the record stays for the next try when there are some)."""
    problems: list[str] = []
    netns = [str(n) for n in body.get("netns") or []]
    for ns in netns:
        problems += _empty_netns(ns)
    for link in [*(str(v) for v in body.get("veths") or []), str(body.get("bridge") or "")]:
        if link and Path("/sys/class/net", link).exists():
            with contextlib.suppress(SetupError):
                run(["ip", "link", "del", link])
            if Path("/sys/class/net", link).exists():
                problems.append(f"cannot delete link {link}")
    problems += _remove_forward_rules(tag)
    stage = body.get("stage")
    if isinstance(stage, str) and stage:
        shutil.rmtree(stage, ignore_errors=True)
    return problems


def _empty_netns(ns: str) -> list[str]:
    if not Path("/run/netns", ns).exists():
        return []
    for _ in range(50):
        pids = [
            int(p) for p in run(["ip", "netns", "pids", ns], check=False).split() if p.isdigit()
        ]
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)
    with contextlib.suppress(SetupError):
        run(["ip", "netns", "del", ns])
    return [f"cannot delete namespace {ns}"] if Path("/run/netns", ns).exists() else []


def _remove_forward_rules(tag: str) -> list[str]:
    if shutil.which("iptables") is None:
        return []
    comment = f"lab-rig:{tag}"
    problems = []
    for line in run(["iptables", "-w", "-S", "FORWARD"], check=False).splitlines():
        if comment in line.split('"') or f"--comment {comment} " in f"{line} ":
            spec = shlex.split(line.removeprefix("-A "))
            with contextlib.suppress(SetupError):
                run(["iptables", "-w", "-D", *spec])
            if run(["iptables", "-w", "-C", *spec], check=False).strip():
                problems.append(f"cannot delete {line}")
    return problems
