"""The lab's images, built on this machine: nothing is ever pulled.

    lab-base         Debian minbase with python3, made by mmdebstrap from the host's own
                     apt sources and imported with `docker import`
    lab-broker-ref   containers/broker_ref/Dockerfile on lab-base: broker_ref and the
                     python-qpid-proton wheel of the host's virtual environment
    lab-toxiproxy    containers/toxiproxy/Dockerfile on lab-base: the toxiproxy-server binary
                     the process backend runs
    lab-manager      containers/manager/Dockerfile on lab-base: the cluster manager of an
                     active-passive cluster (docker-compose's active-passive profile)
    lab-jvm          Debian minbase with a Java runtime and jcmd (openjdk-17-jdk-headless),
                     made like lab-base; built only when a JVM target is asked for
    lab-qpid-broker-j  containers/qpid-broker-j/Dockerfile on lab-jvm: Broker-J's unpacked
                     binary distribution (lab.targets.brokerj.distribution)
    lab-artemis      containers/artemis/Dockerfile on lab-jvm: Artemis's unpacked binary
                     distribution (lab.targets.artemis.distribution)
    lab-rabbitmq     Debian minbase with Debian's rabbitmq-server (and its Erlang), made like
                     lab-base; built only when RabbitMQ is asked for

Each image is tagged by a content hash of its inputs (`lab-broker-ref:3f2a…`), so a
second build with the same inputs reuses it; each is also tagged `:current`, the name
docker-compose.yml uses. Every image carries the label `lab.image=<role>`.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import docker
from docker.errors import APIError, BuildError, DockerException, ImageNotFound
from testcontainers.core.image import DockerImage

from lab.backends.docker.base_image import EXCLUDED_PATHS, build_base, debian_suite
from lab.backends.docker.engine import Say, ensure_engine
from lab.backends.toxiproxy import find_server_binary
from lab.ground.errors import SetupError
from lab.ground.locks import host_lock
from lab.ground.paths import LAB_ROOT, user_cache

__all__ = [
    "BASE_PACKAGES",
    "IMAGE_LABEL",
    "ImageRef",
    "build_images",
    "image_refs",
    "remove_images",
]

IMAGE_LABEL = "lab.image"
CURRENT = "current"
BASE_PACKAGES: tuple[str, ...] = ("python3", "python3-cffi-backend", "libssl3")
JVM_PACKAGES: tuple[str, ...] = ("openjdk-17-jdk-headless",)
RABBITMQ_PACKAGES: tuple[str, ...] = ("rabbitmq-server",)
DEFAULT_TARGETS = ("broker_ref",)
_RECIPE_VERSION = "1"  # bump when the way an image is made changes
_ROOT = LAB_ROOT


@dataclass(frozen=True)
class ImageRef:
    """An image the lab uses: its role, repository and content-hash tag."""

    role: str
    repository: str
    digest: str

    @property
    def tag(self) -> str:
        return f"{self.repository}:{self.digest}"

    @property
    def current(self) -> str:
        return f"{self.repository}:{CURRENT}"


@dataclass(frozen=True)
class _Layer:
    """An image built from a context on top of a root-filesystem image."""

    ref: ImageRef
    files: dict[str, Path]
    on: ImageRef


def _plan(targets: Iterable[str]) -> tuple[list[tuple[ImageRef, tuple[str, ...]]], list[_Layer]]:
    """(root filesystems with their packages, layers on them) for the targets asked."""
    base = ImageRef("base", "lab-base", _digest(_base_inputs(BASE_PACKAGES)))
    roots = [(base, BASE_PACKAGES)]
    toxiproxy = _toxiproxy_files()
    manager = _manager_files()
    layers = [
        _Layer(_ref("toxiproxy", "lab-toxiproxy", toxiproxy, base), toxiproxy, base),
        _Layer(_ref("manager", "lab-manager", manager, base), manager, base),
    ]
    wanted = set(targets)
    if "broker_ref" in wanted:
        files = _broker_ref_files()
        layers.append(_Layer(_ref("broker_ref", "lab-broker-ref", files, base), files, base))
    jvm = ImageRef("jvm", "lab-jvm", _digest(_base_inputs(JVM_PACKAGES)))
    if wanted & {"qpid-broker-j", "artemis"}:
        roots.append((jvm, JVM_PACKAGES))
    if "qpid-broker-j" in wanted:
        files = _brokerj_files()
        layers.append(_Layer(_ref("qpid-broker-j", "lab-qpid-broker-j", files, jvm), files, jvm))
    if "artemis" in wanted:
        files = _artemis_files()
        layers.append(_Layer(_ref("artemis", "lab-artemis", files, jvm), files, jvm))
    if "rabbitmq" in wanted:
        rabbitmq = ImageRef("rabbitmq", "lab-rabbitmq", _digest(_base_inputs(RABBITMQ_PACKAGES)))
        roots.append((rabbitmq, RABBITMQ_PACKAGES))
    return roots, layers


def _ref(role: str, repository: str, files: dict[str, Path], on: ImageRef) -> ImageRef:
    return ImageRef(role, repository, _digest(_context_inputs(files, on)))


def image_refs(targets: Iterable[str] = DEFAULT_TARGETS) -> dict[str, ImageRef]:
    """The images the lab's inputs on this machine call for, without building anything."""
    roots, layers = _plan(targets)
    return {ref.role: ref for ref in [r for r, _ in roots] + [layer.ref for layer in layers]}


def build_images(say: Say, targets: Iterable[str] = DEFAULT_TARGETS) -> dict[str, str]:
    """Build whichever of the images the targets need is missing; return role -> image tag."""
    client = ensure_engine(say)
    try:
        with host_lock("docker-images"):
            roots, layers = _plan(targets)
            for root, packages in roots:
                if not _exists(client, root.tag):
                    build_base(
                        client,
                        root.repository,
                        root.digest,
                        root.tag,
                        IMAGE_LABEL,
                        root.role,
                        packages,
                        say,
                    )
            for layer in layers:
                if not _exists(client, layer.ref.tag):
                    _build_from_context(layer.ref, layer.files, layer.on, say)
            refs = [r for r, _ in roots] + [layer.ref for layer in layers]
            for ref in refs:
                client.images.get(ref.tag).tag(ref.repository, CURRENT)
            for ref in sorted(refs, key=lambda r: r in [root for root, _ in roots]):
                _prune_older(client, ref)
            return {ref.role: ref.tag for ref in refs}
    finally:
        client.close()


def remove_images(say: Say) -> int:
    """Remove every image the lab built (label lab.image); return how many."""
    client = ensure_engine(say)
    try:
        removed = 0
        images = client.images.list(filters={"label": IMAGE_LABEL})
        # Children before parents: the broker and Toxiproxy images sit on lab-base.
        images.sort(key=lambda image: image.labels.get(IMAGE_LABEL) in ("base", "jvm"))
        for image in images:
            try:
                client.images.remove(image.id, force=True)
                removed += 1
            except ImageNotFound:
                continue
        return removed
    finally:
        client.close()


# -- inputs ------------------------------------------------------------------------------------


def _base_inputs(packages: tuple[str, ...]) -> list[tuple[str, bytes]]:
    recipe = "\n".join([_RECIPE_VERSION, debian_suite(), *packages, *EXCLUDED_PATHS])
    return [("recipe", recipe.encode())]


def _brokerj_files() -> dict[str, Path]:
    """The Broker-J image's context: its Dockerfile and the unpacked distribution."""
    from lab.targets.brokerj.distribution import ensure_distribution

    dockerfile = _ROOT / "containers" / "qpid-broker-j" / "Dockerfile"
    if not dockerfile.is_file():
        raise SetupError(f"{dockerfile} is missing: the docker backend runs from a lab checkout")
    home = ensure_distribution().home
    files = {"Dockerfile": dockerfile}
    for path in sorted(home.rglob("*")):
        if path.is_file():
            files[f"home/{path.relative_to(home)}"] = path
    return files


def _artemis_files() -> dict[str, Path]:
    """The Artemis image's context: its Dockerfile and the unpacked distribution."""
    from lab.targets.artemis.distribution import ensure_distribution as artemis_distribution

    dockerfile = _ROOT / "containers" / "artemis" / "Dockerfile"
    if not dockerfile.is_file():
        raise SetupError(f"{dockerfile} is missing: the docker backend runs from a lab checkout")
    home = artemis_distribution().home
    files = {"Dockerfile": dockerfile}
    for path in sorted(home.rglob("*")):
        if path.is_file():
            files[f"home/{path.relative_to(home)}"] = path
    return files


def _broker_ref_files() -> dict[str, Path]:
    """Build-context path -> source file for the broker_ref image."""
    package = _ROOT / "broker_ref"
    dockerfile = _ROOT / "containers" / "broker_ref" / "Dockerfile"
    if not dockerfile.is_file():
        raise SetupError(f"{dockerfile} is missing: the docker backend runs from a lab checkout")
    files = {"Dockerfile": dockerfile}
    for path in sorted(package.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            files[f"broker_ref/{path.relative_to(package)}"] = path
    wheel = _proton_wheel()
    files[f"wheels/{wheel.name}"] = wheel
    return files


def _manager_files() -> dict[str, Path]:
    """The cluster manager's image: lab/__init__.py, lab/ground and lab/manager."""
    files = {"Dockerfile": _ROOT / "containers" / "manager" / "Dockerfile"}
    files["lab/__init__.py"] = _ROOT / "lab" / "__init__.py"
    for folder in ("ground", "manager"):
        for path in sorted((_ROOT / "lab" / folder).glob("*.py")):
            files[f"lab/{folder}/{path.name}"] = path
    return files


def _toxiproxy_files() -> dict[str, Path]:
    dockerfile = _ROOT / "containers" / "toxiproxy" / "Dockerfile"
    if not dockerfile.is_file():
        raise SetupError(f"{dockerfile} is missing: the docker backend runs from a lab checkout")
    return {"Dockerfile": dockerfile, "toxiproxy-server": Path(find_server_binary())}


def _context_inputs(files: dict[str, Path], base: ImageRef) -> list[tuple[str, bytes]]:
    inputs = [("base", base.tag.encode()), ("recipe", _RECIPE_VERSION.encode())]
    inputs += [(name, path.read_bytes()) for name, path in sorted(files.items())]
    return inputs


def _digest(inputs: Iterable[tuple[str, bytes]]) -> str:
    hasher = hashlib.sha256()
    for name, data in inputs:
        hasher.update(f"{name}\0{len(data)}\0".encode())
        hasher.update(data)
    return hasher.hexdigest()[:16]


def _proton_wheel() -> Path:
    """The python-qpid-proton wheel of the version the lab runs, built once into a cache."""
    version = importlib.metadata.version("python-qpid-proton")
    cache = user_cache() / "wheels"
    found = sorted(cache.glob(f"python_qpid_proton-{version}-*.whl"))
    if found:
        return found[0]
    cache.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--quiet",
            "--disable-pip-version-check",
            "-w",
            str(cache),
            f"python-qpid-proton=={version}",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    found = sorted(cache.glob(f"python_qpid_proton-{version}-*.whl"))
    if done.returncode != 0 or not found:
        raise SetupError(f"could not build the python-qpid-proton {version} wheel: {done.stderr}")
    return found[0]


# -- building ----------------------------------------------------------------------------------


def _exists(client: docker.DockerClient, tag: str) -> bool:
    try:
        client.images.get(tag)
    except ImageNotFound:
        return False
    return True


def _prune_older(client: docker.DockerClient, ref: ImageRef) -> None:
    """Remove this role's images built from older inputs, unless a container uses them."""
    for image in client.images.list(filters={"label": f"{IMAGE_LABEL}={ref.role}"}):
        for tag in image.tags:
            if tag not in (ref.tag, ref.current):
                with contextlib.suppress(APIError):
                    client.images.remove(tag)  # the image goes with its last tag


def _build_from_context(ref: ImageRef, files: dict[str, Path], base: ImageRef, say: Say) -> None:
    say(f"building {ref.tag}")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"lab-{ref.role}-") as tmp:
        context = Path(tmp)
        for name, source in files.items():
            dest = context / name
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest)
        image = DockerImage(
            path=context,
            tag=ref.tag,
            clean_up=False,
            buildargs={"BASE": base.tag},
            labels={IMAGE_LABEL: ref.role},
            rm=True,
            forcerm=True,
        )
        try:
            image.build()
        except (BuildError, DockerException) as exc:
            raise SetupError(f"building {ref.tag} failed: {exc}") from exc
        finally:
            image.get_docker_client().client.close()
    say(f"built {ref.tag} in {time.monotonic() - started:.1f} s")


def main() -> int:
    """`python -m lab.backends.docker.images`: build the lab's images; print role and tag."""
    for role, tag in build_images(lambda line: print(line, file=sys.stderr, flush=True)).items():
        print(f"{role}\t{tag}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
