"""A target's distribution from Maven Central: fetched into Maven's local repository with
`mvn dependency:get` on first use, and unpacked once into the lab's cache.

    fetch_artifact("org.apache.qpid:apache-qpid-broker-j:9.2.1:tar.gz:bin", "Broker-J", say)
        → the file in the local repository (`MAVEN_REPO_LOCAL`, or ~/.m2/repository)
    unpack_home(tarball, target, "*/*/bin/qpid-server", "a Broker-J 9.2.1 …")
        → `target/home`: the one folder of the tarball holding the marker, moved into place
          from a temporary folder beside it, so a half-unpacked distribution is never used

The cache is `<checkout>/.lab/cache`, or `~/.cache/lab/distributions` for a lab installed as a
package, or `$LAB_CACHE` (cache_root). Callers hold a machine-wide lock
(lab.ground.locks) around the fetch and unpack of one version.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path

from lab.ground.errors import SetupError
from lab.ground.locks import host_lock
from lab.ground.paths import LAB_ROOT, user_cache

__all__ = [
    "cache_root",
    "fetch_artifact",
    "home_archive",
    "in_repository",
    "make_cache",
    "unpack_home",
]

_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # Maven colours its output even in batch mode


def cache_root() -> Path:
    """`$LAB_CACHE`; else `.lab/cache` in the lab's checkout, or where the lab was installed
    as a package (no checkout around it) the user's cache (`~/.cache/lab/distributions`),
    never the Python environment's own folders."""
    configured = os.environ.get("LAB_CACHE")
    if configured:
        return Path(configured)
    if (LAB_ROOT / "pyproject.toml").is_file():
        return LAB_ROOT / ".lab" / "cache"
    return user_cache() / "distributions"


def make_cache(folder: Path) -> None:
    """`folder` in the lab's cache, made now; a SetupError naming the cache otherwise."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        where = "LAB_CACHE" if os.environ.get("LAB_CACHE") else "the lab's cache"
        raise SetupError(
            f"{where} ({cache_root()}): cannot make {folder}: {exc.strerror}"
        ) from None


def _repository() -> Path:
    configured = os.environ.get("MAVEN_REPO_LOCAL")
    return Path(configured) if configured else Path.home() / ".m2" / "repository"


def in_repository(coordinates: str) -> Path:
    """Where Maven keeps `group:artifact:version[:type[:classifier]]` (type jar by default)."""
    group, artifact, version, *rest = coordinates.split(":")
    kind = rest[0] if rest else "jar"
    classifier = f"-{rest[1]}" if len(rest) > 1 else ""
    folder = _repository() / group.replace(".", "/") / artifact / version
    return folder / f"{artifact}-{version}{classifier}.{kind}"


def fetch_artifact(
    coordinates: str, product: str, say: Callable[[str], None], size: str = ""
) -> Path:
    """The file of a Maven artifact, fetched into the local repository the first time;
    `product` names what needs it in the errors (`Broker-J`), `size` what the fetch weighs."""
    found = in_repository(coordinates)
    if found.is_file():
        return found
    mvn = shutil.which("mvn")
    if mvn is None:
        raise SetupError(
            f"{product} is fetched with Maven on first use: install it (apt-get install maven)"
        )
    say(f"fetching {coordinates} with Maven (once{f'; {size}' if size else ''})")
    command = [mvn, "-q", "-B", "dependency:get", f"-Dartifact={coordinates}", "-Dtransitive=false"]
    if "MAVEN_REPO_LOCAL" in os.environ:
        command.append(f"-Dmaven.repo.local={_repository()}")
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0 or not found.is_file():
        detail = _ANSI.sub("", done.stdout + done.stderr).strip().splitlines()
        reason = next((line for line in detail if "ERROR" in line), detail[-1] if detail else "")
        raise SetupError(f"cannot fetch {coordinates} with Maven: {reason.strip()}")
    return found


def unpack_home(tarball: Path, target: Path, marker: str, refusal: str) -> None:
    """Unpack `tarball` into `target/home`: the folder two levels above the one file that
    matches `marker` (a glob from the tarball's top); a SetupError `refusal` when there is
    not exactly one."""
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".unpack-", dir=target.parent))
    try:
        with tarfile.open(tarball) as archive:
            archive.extractall(scratch, filter="data")
        homes = [p.parent.parent for p in scratch.glob(marker)]
        if len(homes) != 1:
            raise SetupError(refusal)
        homes[0].rename(scratch / "home")
        for child in list(scratch.iterdir()):
            if child.name != "home":
                shutil.rmtree(child)
        scratch.rename(target)
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise


def home_archive(home: Path, lock_name: str) -> Path:
    """An unpacked distribution's home as one .tar.gz beside it (what a host unpacks), made
    once per machine (`lock_name` names the machine-wide lock that makes it)."""
    target = home.parent / "home.tar.gz"
    if target.is_file():
        return target
    with host_lock(lock_name):
        if not target.is_file():
            scratch = target.with_name(f".{target.name}.{os.getpid()}")
            with tarfile.open(scratch, "w:gz", compresslevel=1) as archive:
                for child in sorted(home.iterdir()):
                    archive.add(child, arcname=child.name)
            os.replace(scratch, target)
    return target
