"""broker_ref with its Python packages, as one archive a host unpacks and puts on PYTHONPATH.

A host needs no package registry: the archive holds the `broker_ref` package from the lab's
checkout and the files of the installed distributions it imports (Qpid Proton, and what
Proton requires: cffi …) exactly as this machine's environment has them, listed by their
installation records (importlib.metadata). Their compiled parts are built for this
machine's Python, so a host needs the same Python version (major.minor) and architecture:
`requirement()` says which, and the hosts backend checks it on every host before anything
starts. The archive is made once per content (its name is a hash of what went in) in the
user's cache.
"""

from __future__ import annotations

import hashlib
import importlib.metadata as metadata
import io
import os
import platform
import re
import sys
import tarfile
from pathlib import Path

from lab.ground.errors import SetupError
from lab.ground.locks import host_lock
from lab.ground.paths import LAB_ROOT, user_cache

__all__ = ["DISTRIBUTIONS", "python_requirement", "python_shipment"]

DISTRIBUTIONS = ("python-qpid-proton",)  # what broker_ref imports beyond the standard library
PACKAGE = "broker_ref"


def python_requirement() -> str:
    """`<major>.<minor> <machine>` of this Python: what a host's Python must report."""
    return f"{sys.version_info.major}.{sys.version_info.minor} {platform.machine()}"


def _closure(names: tuple[str, ...]) -> list[metadata.Distribution]:
    """The distributions `names` and what they require (markers and extras left out)."""
    found: dict[str, metadata.Distribution] = {}
    pending = list(names)
    while pending:
        name = pending.pop()
        key = re.sub(r"[-_.]+", "-", name).lower()
        if key in found:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            raise SetupError(f"broker_ref's hosts need {name}, which this Python lacks") from None
        found[key] = dist
        for requirement in dist.requires or []:
            if ";" in requirement:
                continue  # an extra or a marker: not needed at run time
            pending.append(re.split(r"[<>=!~\[ ]", requirement, maxsplit=1)[0])
    return [found[k] for k in sorted(found)]


def _members() -> list[tuple[str, Path]]:
    """(name in the archive, file here) for everything shipped."""
    members: list[tuple[str, Path]] = []
    package = LAB_ROOT / PACKAGE
    for path in sorted(package.rglob("*.py")):
        members.append((str(path.relative_to(LAB_ROOT)), path))
    for dist in _closure(DISTRIBUTIONS):
        for file in dist.files or []:
            local = Path(str(dist.locate_file(file)))
            name = str(file)
            if "__pycache__" in name or name.startswith("..") or not local.is_file():
                continue
            members.append((name, local))
    return members


def python_shipment() -> Path:
    """The archive (made now unless made before), in the user's cache."""
    members = _members()
    digest = hashlib.sha256(python_requirement().encode())
    for name, path in members:
        stat = path.stat()
        digest.update(f"{name}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    folder = user_cache() / "hosts"
    target = folder / f"pylib-{digest.hexdigest()[:16]}.tar.gz"
    if target.is_file():
        return target
    folder.mkdir(parents=True, exist_ok=True)
    with host_lock("python-shipment"):
        if target.is_file():
            return target
        scratch = target.with_name(f".{target.name}.{os.getpid()}")
        with tarfile.open(scratch, "w:gz", compresslevel=6) as archive:
            for name, path in members:
                archive.add(path, arcname=name, recursive=False)
            requirement = python_requirement().encode()
            info = tarfile.TarInfo("LAB-PYTHON")
            info.size = len(requirement)
            archive.addfile(info, io.BytesIO(requirement))
        os.replace(scratch, target)
    return target
