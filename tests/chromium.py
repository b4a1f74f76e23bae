"""Headless Chromium for the tests that look at pages: Debian's chromium, installed with
apt-get when missing (root only), or the test is skipped."""

from __future__ import annotations

import os
import shutil
import subprocess

from lab.pytest_plugin import skip_unless_ci

__all__ = ["CHROMIUM_FLAGS", "chromium"]

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-quic",
    "--no-first-run",
    "--disable-component-update",
    "--disable-sync",
)


def chromium() -> str:
    """The chromium executable, installed with apt-get when missing (root only), or a skip."""
    found = shutil.which("chromium")
    if found:
        return found
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        skip_unless_ci("needs chromium: not installed, and not root to apt-get install chromium")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = [
        "apt-get", "-o", "DPkg::Lock::Timeout=600", "install", "-y", "-q",
        "--no-install-recommends", "chromium",
    ]  # fmt: skip
    done = subprocess.run(install, env=env, capture_output=True, text=True, timeout=1200)
    if done.returncode != 0:  # the package lists may be missing or stale
        subprocess.run(
            ["apt-get", "-o", "DPkg::Lock::Timeout=600", "update", "-q"],
            env=env, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        done = subprocess.run(install, env=env, capture_output=True, text=True, timeout=1200)
    found = shutil.which("chromium")
    if done.returncode != 0 or not found:
        said = done.stderr.strip()[-300:]
        skip_unless_ci(f"chromium could not be installed with apt-get: {said}")
    return found
