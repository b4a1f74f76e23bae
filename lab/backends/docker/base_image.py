"""The lab's base images (lab-base, lab-jvm): Debian minbase made by mmdebstrap from this
machine's own apt sources and imported with `docker import`, so nothing is ever pulled."""

from __future__ import annotations

import subprocess
import tempfile
import time
from pathlib import Path

import docker
from docker.errors import ImageNotFound

from lab.backends.docker.engine import Say, ensure_commands
from lab.ground.errors import SetupError

__all__ = ["EXCLUDED_PATHS", "build_base", "debian_suite"]

EXCLUDED_PATHS = (
    "/usr/share/doc/*",
    "/usr/share/man/*",
    "/usr/share/locale/*",
    "/usr/share/info/*",
)


def debian_suite() -> str:
    """The Debian release this machine's apt sources name (the base image's release)."""
    try:
        lines = Path("/etc/os-release").read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise SetupError(f"cannot read /etc/os-release: {exc}") from exc
    fields = dict(line.split("=", 1) for line in lines if "=" in line)
    if fields.get("ID") != "debian" or not fields.get("VERSION_CODENAME"):
        raise SetupError(
            "the lab builds its base image with mmdebstrap on Debian; this is not Debian"
        )
    return fields["VERSION_CODENAME"].strip('"')


def _apt_sources(suite: str) -> list[str]:
    """The host's apt source files that serve `suite`: the base image uses the same mirrors."""
    candidates = [Path("/etc/apt/sources.list")]
    folder = Path("/etc/apt/sources.list.d")
    if folder.is_dir():
        candidates += sorted(folder.glob("*.sources")) + sorted(folder.glob("*.list"))
    chosen = []
    for path in candidates:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:
            continue
        if _serves(text, suite):
            chosen.append(str(path))
    if not chosen:
        raise SetupError(f"no apt source on this machine serves Debian {suite}")
    return chosen


def _serves(text: str, suite: str) -> bool:
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("Suites:"):
            words = line.split(":", 1)[1].split()
        elif line.startswith("deb "):
            words = [w for w in line.split()[1:] if not w.startswith("[")][1:2]
        else:
            continue
        if suite in words:
            return True
    return False


def build_base(
    client: docker.DockerClient,
    repository: str,
    digest: str,
    tag: str,
    label: str,
    role: str,
    packages: tuple[str, ...],
    say: Say,
) -> None:
    """Make `tag` (`repository:digest`): Debian minbase with `packages`, by mmdebstrap from
    this machine's own apt sources, imported with `docker import`, labelled `label=role`."""
    ensure_commands({"mmdebstrap": "mmdebstrap"}, say)
    suite = debian_suite()
    say(
        f"building {tag} with mmdebstrap (Debian {suite} minbase + {', '.join(packages)}; "
        "a minute or more)"
    )
    started = time.monotonic()
    options = [f"--dpkgopt=path-exclude={p}" for p in EXCLUDED_PATHS]
    options.append("--dpkgopt=path-include=/usr/share/doc/*/copyright")
    with tempfile.TemporaryDirectory(prefix="lab-base-") as tmp:
        tarball = Path(tmp) / "rootfs.tar"
        command = [
            "mmdebstrap",
            "--variant=minbase",
            "--quiet",
            f"--include={','.join(packages)}",
            *options,
            # Java's postinst links its man pages; the folder must exist though pages are
            # not installed (path-exclude above).
            '--essential-hook=mkdir -p "$1"/usr/share/man/man1',
            '--customize-hook=rm -rf "$1"/var/lib/apt/lists/*',
            suite,
            str(tarball),
            *_apt_sources(suite),
        ]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SetupError(
                f"mmdebstrap failed with status {done.returncode}: {done.stderr[-800:]}"
            )
        client.api.import_image_from_file(
            str(tarball),
            repository=repository,
            tag=digest,
            changes=["ENV LANG=C.UTF-8", f"LABEL {label}={role}"],
        )
    try:
        client.images.get(tag)
    except ImageNotFound:
        raise SetupError(f"docker import did not produce {tag}") from None
    say(f"built {tag} in {time.monotonic() - started:.1f} s")
