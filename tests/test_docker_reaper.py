"""The reaper under refusal: a removal the engine refuses is tried again, one that keeps
being refused is named (never dropped without a word), the other dead runs still go, and
what could not be cleared reaches the state folder's orphans.log for the next command.

Fast tests drive the reaper with a fake engine that refuses on cue; the last one makes a
real engine refuse (a volume still used by a container the lab does not own)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from docker.errors import APIError, NotFound

from lab.backends.docker import reaper
from lab.backends.docker.labels import DETACHED, OWNER, ROLE, RUN, SESSION, Owner
from lab.backends.docker.reaper import Reaped, leftovers, reap, remove_run
from lab.cli import orphans
from lab.ground.errors import ClusterError, SetupError
from lab.pytest_plugin import skip_unless_ci

SESSION_LABEL = f"reaper-{uuid.uuid4().hex[:8]}"


def _dead_owner() -> str:
    me = Owner.this_process()
    return Owner(me.host, me.pid, "0").label()  # this pid, but not this process's start


class FakeResource:
    """A container, network or volume that refuses its first `refusals` removals."""

    def __init__(self, engine: FakeEngine, name: str, labels: dict[str, str], refusals: int):
        self.engine, self.name, self.labels, self.refusals = engine, name, labels, refusals
        self.attrs = {"Labels": labels}

    def remove(self, **_: object) -> None:
        self.engine.calls.append(self.name)
        if self not in self.engine.alive:
            raise NotFound(f"no such object: {self.name}")
        if self.refusals:
            self.refusals -= 1
            raise APIError(f"409 Conflict: removal of {self.name} is already in progress")
        self.engine.alive.remove(self)


class FakeKind:
    def __init__(self, engine: FakeEngine, kind: str) -> None:
        self.engine, self.kind = engine, kind

    def list(self, all: bool = False, filters: dict[str, str] | None = None, **_: Any) -> list[Any]:
        key, _, value = (filters or {}).get("label", "").partition("=")
        return [
            r
            for kind, r in self.engine.kinds
            if kind == self.kind
            and r in self.engine.alive
            and key in r.labels
            and (not value or r.labels[key] == value)
        ]


class FakeEngine:
    """Just enough of docker.DockerClient for the reaper."""

    def __init__(self) -> None:
        self.kinds: list[tuple[str, FakeResource]] = []
        self.alive: list[FakeResource] = []
        self.calls: list[str] = []
        self.containers = FakeKind(self, "container")
        self.networks = FakeKind(self, "network")
        self.volumes = FakeKind(self, "volume")

    def add(self, kind: str, name: str, run_id: str, refusals: int = 0, role: str = "node") -> None:
        labels = {RUN: run_id, OWNER: _dead_owner(), DETACHED: "0", ROLE: role}
        resource = FakeResource(self, name, labels, refusals)
        self.kinds.append((kind, resource))
        self.alive.append(resource)

    def run(self, run_id: str, refusals: dict[str, int] | None = None) -> None:
        said = refusals or {}
        for kind, part in (("container", "n1"), ("container", "toxiproxy"), ("network", "net")):
            name = f"lab-{run_id}-{part}"
            self.add(kind, name, run_id, said.get(name, 0))
        self.add("volume", f"lab-{run_id}-n1-data", run_id, said.get(f"lab-{run_id}-n1-data", 0))

    def names(self) -> list[str]:
        return sorted(r.name for r in self.alive)


def test_a_refused_removal_is_tried_again_until_the_run_is_gone() -> None:
    engine, waits = FakeEngine(), []
    engine.run("r1", {"lab-r1-n1": 2})
    removed = remove_run(engine, "r1", wait=waits.append)  # type: ignore[arg-type]
    assert engine.names() == []
    assert sorted(removed) == ["lab-r1-n1", "lab-r1-n1-data", "lab-r1-net", "lab-r1-toxiproxy"]
    assert waits == [0.25, 0.5]  # twice refused: two rounds more, each waiting longer
    assert engine.calls.count("lab-r1-n1") == 3


def test_what_keeps_being_refused_is_named_and_the_rest_removed() -> None:
    engine = FakeEngine()
    engine.run("r1", {"lab-r1-n1-data": 99})
    with pytest.raises(ClusterError) as raised:
        remove_run(engine, "r1", attempts=3, wait=lambda _: None)  # type: ignore[arg-type]
    said = str(raised.value)
    assert "run r1 is not fully removed after 3 attempts" in said
    assert "lab-r1-n1-data: APIError" in said and "already in progress" in said
    assert engine.names() == ["lab-r1-n1-data"]
    assert engine.calls.count("lab-r1-n1-data") == 3


def test_an_object_another_reaper_removed_first_is_not_a_refusal() -> None:
    engine = FakeEngine()
    engine.run("r1")
    stolen = engine.containers.list(filters={"label": RUN})[0]

    class Racing(FakeKind):
        def list(
            self, all: bool = False, filters: dict[str, str] | None = None, **_: Any
        ) -> list[Any]:
            found = super().list(all, filters)
            if stolen in engine.alive:
                engine.alive.remove(stolen)  # listed, then gone before its removal
            return found

    engine.containers = Racing(engine, "container")
    removed = remove_run(engine, "r1", wait=lambda _: None)  # type: ignore[arg-type]
    assert stolen.name not in removed and engine.names() == []


def test_reaping_goes_on_past_a_run_it_cannot_remove() -> None:
    engine = FakeEngine()
    engine.run("a1", {"lab-a1-net": 99})
    engine.run("b2")
    reaped = reap(engine, attempts=2)  # type: ignore[arg-type]
    assert reaped.removed == ("b2",)
    [failure] = reaped.failed
    assert "run a1 is not fully removed" in failure and "lab-a1-net" in failure
    assert engine.names() == ["lab-a1-net"]
    with pytest.raises(ClusterError, match="lab-a1-net"):
        reaped.raise_failures()
    Reaped(("b2",)).raise_failures()  # nothing failed: nothing raised


def test_an_engine_that_runs_but_never_answers_is_an_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_answer(timeout_s: float = 60.0) -> Any:
        raise SetupError("no Docker engine answers at unix:///var/run/docker.sock: timed out")

    monkeypatch.delenv("DOCKER_HOST", raising=False)
    monkeypatch.setattr(reaper, "connect", no_answer)
    monkeypatch.setattr(reaper, "dockerd_running", lambda: True)
    with pytest.raises(SetupError, match="timed out"):
        reaper.reap_leftovers()
    monkeypatch.setattr(reaper, "dockerd_running", lambda: False)
    assert reaper.reap_leftovers() == []  # no engine at all: nothing can be left


def test_what_could_not_be_cleared_is_logged_for_the_next_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = FakeEngine()
    engine.run("a1", {"lab-a1-n1": 99})
    engine.run("b2")
    monkeypatch.setattr(reaper, "connect", lambda timeout_s=60.0: _Closing(engine))
    monkeypatch.setattr(reaper, "_ATTEMPTS", 2)
    monkeypatch.setattr(reaper, "_FIRST_WAIT_S", 0.0)
    monkeypatch.setattr(orphans, "_settle_folders", list)
    monkeypatch.setattr(orphans, "_reap_disks", list)
    monkeypatch.setattr(orphans, "_reap_peer_filters", list)
    monkeypatch.setenv("DOCKER_HOST", "unix:///nowhere")
    log = tmp_path / ".lab" / "orphans.log"
    orphans.clear_orphans(log)
    [line] = log.read_text(encoding="utf-8").splitlines()
    assert "could not clear containers: ClusterError: run a1 is not fully removed" in line
    assert "lab-a1-n1: APIError" in line
    assert engine.names() == ["lab-a1-n1"]  # b2 went; a1's refused container waits
    engine.alive[0].refusals = 0
    assert orphans.clear_orphans(log) == ["containers of run a1"]  # the next command's try


class _Closing:
    def __init__(self, engine: FakeEngine) -> None:
        self.engine = engine
        self.containers, self.networks, self.volumes = (
            engine.containers,
            engine.networks,
            engine.volumes,
        )

    def close(self) -> None:
        pass


@pytest.fixture
def engine() -> Iterator[Any]:
    from lab.backends.docker.engine import can_install, engine_answers, ensure_engine

    if not engine_answers() and not can_install():
        skip_unless_ci("no Docker engine answers, and the lab installs one only as root on Debian")
    client = ensure_engine(lambda line: None)
    yield client
    client.close()


@pytest.mark.docker
def test_a_real_engine_refusing_a_removal_is_reported_then_retried(engine: Any) -> None:
    from lab.backends.docker.images import build_images

    base = build_images(lambda line: None, ())["base"]
    run_id = f"dead{uuid.uuid4().hex[:6]}"
    labels = {RUN: run_id, OWNER: _dead_owner(), DETACHED: "0", SESSION: SESSION_LABEL}
    volume = engine.volumes.create(f"lab-{run_id}-n1-data", labels=labels)
    engine.networks.create(f"lab-{run_id}-net", labels=labels, internal=True)
    # Not the lab's (no label): the reaper must leave it, and the engine refuses the volume.
    user = engine.containers.create(base, ["true"], volumes={volume.name: {"bind": "/data"}})
    try:
        reaped = reap(engine, attempts=2)
        failed = [f for f in reaped.failed if f"run {run_id} " in f]
        assert run_id not in reaped.removed and len(failed) == 1, reaped
        assert f"lab-{run_id}-n1-data: APIError" in failed[0] and "in use" in failed[0]
        left = leftovers(engine, f"{RUN}={run_id}")
        assert left.volumes == (volume.name,) and left.networks == ()
        user.reload()  # still there: nothing without the lab's label is touched
    finally:
        user.remove(force=True)
    reap(engine)  # (or another test worker's lab command reaped it first)
    assert leftovers(engine, f"{RUN}={run_id}").empty
