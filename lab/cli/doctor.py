"""`lab doctor`: what the lab found on this machine, and for each missing piece what it
enables and the command that installs it.

Exit status 0 when everything a first `lab run` needs is here (Python, the lab's packages,
the Toxiproxy server), 1 when a piece of that is missing; the other pieces only widen what the
lab can do and never fail the command."""

from __future__ import annotations

import argparse
import json
from concurrent.futures import ThreadPoolExecutor

from lab.cli.common import Commands
from lab.cli.doctor_probes import PROBES, Finding, Probe
from lab.ground.paths import LAB_ROOT

__all__ = ["register"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> Commands:
    doctor = sub.add_parser(
        "doctor", help="what the lab found on this machine, and how to install what is missing"
    )
    doctor.add_argument("--json", action="store_true", help="one JSON object instead of a table")
    return {"doctor": _cmd_doctor}


def _look(probe: Probe) -> Finding:
    try:
        return probe.look()
    except Exception as exc:  # a probe that breaks says so in its row, never ends the command
        return Finding(False, f"could not look: {type(exc).__name__}: {exc}")


def _cmd_doctor(args: argparse.Namespace) -> int:
    with ThreadPoolExecutor(max_workers=len(PROBES)) as pool:
        findings = list(pool.map(_look, PROBES))
    ready = all(f.ok for p, f in zip(PROBES, findings, strict=True) if p.needed_for_first_run)
    if args.json:
        rows = [
            {
                "piece": p.name,
                "ok": f.ok,
                "found": f.detail,
                "enables": p.enables,
                "install": None if f.ok else p.install,
                "needed_for_first_run": p.needed_for_first_run,
            }
            for p, f in zip(PROBES, findings, strict=True)
        ]
        print(json.dumps({"ready_for_first_run": ready, "pieces": rows}, indent=2))
    else:
        for line in table(PROBES, findings):
            print(line)
        print()
        print(
            "ready: `lab run` works on local processes"
            if ready
            else "not ready: a piece `lab run` needs is missing (above); "
            + (
                "scripts/bootstrap.sh installs the lab's own"
                if (LAB_ROOT / "scripts" / "bootstrap.sh").is_file()
                else "each row says how to get it"
            )
        )
    return 0 if ready else 1


def table(probes: tuple[Probe, ...], findings: list[Finding]) -> list[str]:
    """One line per piece (`ok` or `--`, its name, what was found); under a missing piece, what
    it enables and the command that installs it."""
    width = max(len(p.name) for p in probes)
    lines = []
    for probe, found in zip(probes, findings, strict=True):
        mark = "ok" if found.ok else "--"
        lines.append(f"{mark}  {probe.name:<{width}}  {found.detail}")
        if not found.ok:
            pad = " " * (width + 6)
            lines.append(f"{pad}enables: {probe.enables}")
            lines.append(f"{pad}install: {probe.install}")
    return lines
