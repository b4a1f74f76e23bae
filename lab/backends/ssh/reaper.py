"""What killed labs left of the hosts backend, removed by the next `lab` command: rigs whose
owner is gone (their namespaces, processes, veths, bridge, forwarding rule, keys), and the
sessions on hosts whose lab is gone (lab.backends.ssh.session). Rigs first: a session whose
hosts were a rig that is gone needs no SSH to be cleaned."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from lab.backends.ssh.rig import RIGS
from lab.backends.ssh.rig_network import RigNames
from lab.backends.ssh.rig_teardown import remove_rig
from lab.ground.children import process_alive
from lab.ground.errors import ClusterError

__all__ = ["reap_rigs"]


def reap_rigs() -> list[str]:
    """Remove every rig whose lab is gone, by its record, then any namespace or link named
    after a lab that is gone and has no record left; what was removed."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        return []
    removed: list[str] = []
    problems: list[str] = []
    for record in RIGS.records():
        if not record.orphaned:
            continue
        left = remove_rig(record.body, record.path.stem)
        if left:
            problems.extend(left)
        else:
            record.remove()
            removed.append(f"rig {record.path.stem}")
    dead: dict[str, list[str]] = {}
    for ns in sorted(p.name for p in Path("/run/netns").glob("lab-rig-*")):
        owner = RigNames.owner_of_netns(ns)
        if owner is not None and not process_alive(owner[0]):
            dead.setdefault(f"{owner[0]}.{owner[1]}", []).append(ns)
    for link in sorted(p.name for p in Path("/sys/class/net").glob("lr*")):
        owner = RigNames.owner_of_link(link)
        if owner is not None and not process_alive(owner[0]):
            dead.setdefault(f"{owner[0]}.{owner[1]}", []).append(link)
    for tag, names in dead.items():
        if RIGS.read(tag) is not None:
            continue  # its owner's record says more; removed above or next time
        body = {
            "netns": [n for n in names if n.startswith("lab-rig-")],
            "veths": [n for n in names if not n.startswith("lab-rig-")],
        }
        left = remove_rig(body, tag)
        problems.extend(left)
        removed.extend([] if left else [f"rig {tag} (unrecorded: {', '.join(names)})"])
    if problems:
        raise ClusterError("; ".join(problems))
    return removed
