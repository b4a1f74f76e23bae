"""What the installed packages of an environment differ in from a lock file.

    python scripts/lock_drift.py [LOCK]     (default locks/tests.txt)

Prints one line per package whose installed version is not the locked one (`name locked →
installed`), per locked package missing, and per installed package the lock does not name;
then a summary line. Exit status 0 (it describes, it does not judge). scripts/try-newest.sh
uses it to name what changed when the newest versions fail the suite.
"""

from __future__ import annotations

import re
import sys
from importlib import metadata
from pathlib import Path

from packaging.markers import Marker

_PIN = re.compile(
    r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==([^\s;\\]+)\s*(?:;\s*([^\\]+?))?\s*\\?$"
)


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def locked_versions(text: str, environment: dict[str, str] | None = None) -> dict[str, str]:
    """The `name==version` pins of a (universal) lock file that apply to this environment (or
    to `environment`, a dict of marker variables), by canonical name."""
    pins: dict[str, str] = {}
    for line in text.splitlines():
        found = _PIN.match(line)
        if found is None:
            continue
        name, version, marker = found.groups()
        if marker is None or Marker(marker).evaluate(environment):
            pins[canonical(name)] = version
    return pins


def installed_versions() -> dict[str, str]:
    found: dict[str, str] = {}
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if name:
            found[canonical(name)] = dist.version
    return found


def drift(
    locked: dict[str, str], installed: dict[str, str], ignore: frozenset[str] = frozenset()
) -> list[str]:
    """One line per difference, sorted by package name."""
    lines: list[str] = []
    for name in sorted(set(locked) | set(installed)):
        if name in ignore:
            continue
        want, have = locked.get(name), installed.get(name)
        if want == have:
            continue
        if have is None:
            lines.append(f"{name} {want} → not installed")
        elif want is None:
            lines.append(f"{name} not in the lock → {have}")
        else:
            lines.append(f"{name} {want} → {have}")
    return lines


# Installed but never locked on purpose: the installers and the lab itself.
NOT_LOCKED = frozenset({"pip", "setuptools", "wheel", "ha-chaos-lab"})


def main(argv: list[str]) -> int:
    lock = Path(argv[0] if argv else "locks/tests.txt")
    lines = drift(
        locked_versions(lock.read_text(encoding="utf-8")), installed_versions(), NOT_LOCKED
    )
    for line in lines:
        print(line)
    print(f"{len(lines)} package(s) differ from {lock}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
