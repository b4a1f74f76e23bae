"""Each rig host's sshd: its configuration, and the script that makes its mount namespace
private (file systems of its own over what it must not see of this machine) and starts it."""

from __future__ import annotations

import shlex
from pathlib import Path

from lab.ground.paths import LAB_ROOT

__all__ = ["HOST_DIR", "hidden", "sshd_config", "start_script"]

HOST_DIR = "/srv/lab"  # each host's private working folder (a file system of its own)


def hidden() -> list[str]:
    """What each host must not see of this machine: the lab's checkout (and its neighbours),
    temporary and home folders, run-time state (the Docker socket …)."""
    paths = {"/tmp", "/var/tmp", "/root", "/home", "/srv", "/dev/shm", str(LAB_ROOT)}
    if LAB_ROOT.parent != Path("/"):
        paths.add(str(LAB_ROOT.parent))
    paths.add(str(Path.home()))
    return sorted(p for p in paths if p != "/")


def sshd_config(address: str) -> str:
    return "\n".join(
        [
            "Port 22",
            f"ListenAddress {address}",
            "HostKey /run/lab-host/ssh_host_ed25519_key",
            "PidFile /run/lab-host/sshd.pid",
            "AuthorizedKeysFile /run/lab-host/authorized_keys",
            "PermitRootLogin prohibit-password",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "UsePAM no",
            "StrictModes no",
            "PrintMotd no",
            "MaxSessions 64",
            "MaxStartups 64",
            "LogLevel ERROR",
            "Subsystem sftp internal-sftp",
            "",
        ]
    )


def start_script(folder: Path, hidden: list[str]) -> str:
    """Run in the host's own mount namespace: its run-time folder and private file systems
    over what it must not see, then sshd in the foreground."""
    quoted = " ".join(shlex.quote(p) for p in hidden)
    return f"""set -e
mount -t tmpfs -o size=16m,mode=0755 lab-rig /run
mkdir -p /run/sshd /run/lab-host
cp {shlex.quote(str(folder))}/sshd_config {shlex.quote(str(folder))}/authorized_keys \\
   {shlex.quote(str(folder))}/ssh_host_ed25519_key /run/lab-host/
chmod 0600 /run/lab-host/ssh_host_ed25519_key
for path in {quoted}; do
  if [ -d "$path" ]; then
    case "$path" in /tmp|/var/tmp|/dev/shm) mode=1777 ;; *) mode=0755 ;; esac
    mount -t tmpfs -o size=2g,mode=$mode lab-rig "$path"
  fi
done
mkdir -p {HOST_DIR}
exec /usr/sbin/sshd -D -e -f /run/lab-host/sshd_config
"""
