"""The machine a figure or a verdict was obtained on: CPUs, operating system, Python, Java.

    this_machine()           Machine of the running process (asks `java -version`)
    Machine.describe()       "2 CPUs, Debian GNU/Linux 12 (bookworm), Linux 6.1.0, Python 3.11.2,
                             Java 17.0.13"
    Machine.to_json(), Machine.from_json(raw)

Generated result pages (docs/observed/) carry it beside their date, so a figure is never
read without the machine that made it.
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Machine", "this_machine"]

NO_JAVA = "none"


@dataclass(frozen=True)
class Machine:
    cpus: int
    os: str
    python: str
    java: str

    def describe(self) -> str:
        cpus = f"{self.cpus} CPU" if self.cpus == 1 else f"{self.cpus} CPUs"
        java = "no Java" if self.java == NO_JAVA else f"Java {self.java}"
        return f"{cpus}, {self.os}, Python {self.python}, {java}"

    def to_json(self) -> dict[str, Any]:
        return {"cpus": self.cpus, "os": self.os, "python": self.python, "java": self.java}

    @staticmethod
    def from_json(raw: Mapping[str, Any]) -> Machine:
        return Machine(
            cpus=int(raw["cpus"]),
            os=str(raw["os"]),
            python=str(raw["python"]),
            java=str(raw["java"]),
        )


def this_machine(os_release: Path = Path("/etc/os-release")) -> Machine:
    return Machine(
        cpus=os.cpu_count() or 1,
        os=_os_name(os_release),
        python=platform.python_version(),
        java=_java_version(),
    )


def _os_name(os_release: Path) -> str:
    kernel = f"{platform.system()} {platform.release()}"
    try:
        text = os_release.read_text(encoding="utf-8")
    except OSError:
        return kernel
    found = re.search(r'^PRETTY_NAME="?([^"\n]*)"?$', text, re.MULTILINE)
    return f"{found[1]}, {kernel}" if found else kernel


def _java_version() -> str:
    """The `java` on PATH's version (`java -version` prints it on stderr), or "none"."""
    try:
        done = subprocess.run(
            ["java", "-version"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return NO_JAVA
    found = re.search(r'version "([^"]+)"', done.stderr + done.stdout)
    return found[1] if found else NO_JAVA
