"""`lab up` and `lab down`: a cluster that outlives the command, recorded in a state file."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

from lab.backends.catalog import Cluster, make_cluster
from lab.cli.standalone_manager import UP_SETTINGS, hand_over
from lab.ground.cluster_settings import ACTIVE_PASSIVE, MODES, REPLICATED_GROUP, SELF_ACTIVATED
from lab.ground.errors import ClusterError, InputError, UsageError
from lab.ground.files import write_json
from lab.ground.spec import Durability, GroupSettings, Topology
from lab.targets.catalog import make_target
from lab.targets.protocol import ActivatesItself

__all__ = ["cluster_down", "cluster_up"]

STATE_FILE = "cluster.json"


def _state_path(state_dir: Path) -> Path:
    return state_dir / STATE_FILE


def cluster_up(
    state_dir: Path,
    *,
    nodes: int,
    backend: str,
    target: str,
    toxiproxy_port: int | None,
    mode: str | None = None,
    timeout_s: float = 30.0,
    hosts_file: Path | None = None,
    target_settings: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Start a cluster detached from this process; return what `lab up` prints. An
    active-passive cluster's manager is handed over to a process of its own; a target whose
    brokers activate themselves has none, and runs in active-passive mode by default."""
    node_target = make_target(target)
    self_activated = isinstance(node_target, ActivatesItself) and node_target.activates_itself
    if mode is None:
        mode = ACTIVE_PASSIVE if self_activated else REPLICATED_GROUP
    if mode not in MODES:
        raise UsageError(f"unknown mode {mode!r} (known: {', '.join(MODES)})")
    from lab.compose import read_hosts

    hosts = read_hosts(backend, hosts_file)
    if hosts is not None and mode == ACTIVE_PASSIVE:
        raise UsageError("lab up --backend ssh runs replicated groups (active-passive: lab run)")
    settings = (
        UP_SETTINGS.with_changes(activation=SELF_ACTIVATED) if self_activated else UP_SETTINGS
    )
    context = {target: dict(target_settings)} if target_settings else {}
    state = _state_path(state_dir)
    if state.exists():
        raise UsageError(f"a cluster is already up (see {state}); run `lab down` first")
    work_dir = state_dir / "cluster"
    work_dir.mkdir(parents=True, exist_ok=True)
    cluster = make_cluster(
        backend,
        node_target,
        Topology(nodes=nodes),
        Durability(),
        work_dir,
        detached=True,
        toxiproxy_port=toxiproxy_port,
        group=GroupSettings(mode=mode, active_passive=settings, target_context=context),
        hosts=hosts,
    )
    cluster.check()
    cluster.start(timeout_s=max(timeout_s, node_target.ready_timeout_s))
    pids = cluster.pids()
    described = cluster.describe()
    if cluster.has_manager:
        pids["manager"] = hand_over(cluster, work_dir)
        described["virtual_address"] = cluster.vip_url()
    write_json(
        state,
        {
            **described,
            "backend": backend,
            "target": target,
            "work_dir": str(work_dir),
            "toxiproxy_api": f"http://127.0.0.1:{cluster.proxy_client().port}",
            "links": sorted(cluster.proxies),
            "mode": mode,
            "pids": pids,
            **_docker_record(cluster),
            **_hosts_record(cluster),
        },
    )
    if cluster.backend == "ssh":
        cluster.stop()  # detached: only its SSH connections close; the nodes run on
    return described


def _docker_record(cluster: Cluster) -> dict[str, Any]:
    """A docker cluster's run id (its containers' label) and container names."""
    if cluster.backend != "docker":
        return {}
    from lab.backends.docker.cluster import DockerCluster

    assert isinstance(cluster, DockerCluster)
    return {"docker_run": cluster.run_id, "containers": cluster.containers()}


def _hosts_record(cluster: Cluster) -> dict[str, Any]:
    """A hosts cluster's session (what `lab down` removes from the hosts) and hosts file."""
    if cluster.backend != "ssh":
        return {}
    from lab.backends.ssh.cluster import SshCluster

    assert isinstance(cluster, SshCluster)
    return {"hosts_session": cluster.session.id, "hosts_file": str(cluster.inventory.source)}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _ours(pid: int, work_dir: str, name: str) -> bool:
    """Only signal a process whose command line (or, for a target's service beside the nodes,
    its working folder) shows it is the one we started."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        cwd = os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return False
    if work_dir in cmdline or (name == "toxiproxy" and "toxiproxy-server" in cmdline):
        return True
    return Path(cwd) == Path(work_dir).resolve()


def cluster_down(state_dir: Path, timeout_s: float = 5.0) -> list[str]:
    """Stop what `lab up` started (an active-passive cluster's manager first, so it restarts
    nothing); return the names stopped. No state file: nothing to do."""
    state = _state_path(state_dir)
    if not state.exists():
        return _reap_docker_leftovers()
    try:
        recorded = json.loads(state.read_text(encoding="utf-8"))
        if not isinstance(recorded, dict):
            raise TypeError("not a JSON object")
        pids = {str(k): int(v) for k, v in recorded.get("pids", {}).items()}
        work_dir = str(recorded["work_dir"])
        docker_run = str(recorded["docker_run"]) if recorded.get("backend") == "docker" else None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"{state}: cannot read the cluster state: {exc}") from exc
    stopped: list[str] = []
    if "manager" in pids:
        stopped += _stop({"manager": pids.pop("manager")}, work_dir, timeout_s)
    if docker_run is not None:
        stopped += _docker_down(state, docker_run, Path(work_dir))
        return stopped
    if recorded.get("backend") == "ssh":
        stopped += _stop(pids, work_dir, timeout_s)
        stopped += _hosts_down(str(recorded.get("hosts_session")))
        state.unlink()
        return stopped
    stopped += _stop({**_started_again(work_dir, pids), **pids}, work_dir, timeout_s)
    state.unlink()
    return stopped


def _hosts_down(session: str) -> list[str]:
    """Every node of a `lab up` session killed on its hosts and its folders removed."""
    from lab.backends.ssh.session import SESSIONS, clean_session

    record = SESSIONS.read(session)
    if record is None:
        return []
    problems = clean_session(record.body)
    if problems:
        raise ClusterError("; ".join(problems))
    record.remove()
    return [f"{h['node']} on {h['name']}" for h in record.body.get("hosts", [])]


def _started_again(work_dir: str, known: dict[str, int]) -> dict[str, int]:
    """Node processes of the cluster not in the state file (its manager restarted them),
    found by their command line, which names the node's configuration in `work_dir`."""
    found: dict[str, int] = {}
    root = str(Path(work_dir).resolve())
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in known.values():
            continue
        try:
            words = (entry / "cmdline").read_bytes().decode().split("\0")
        except OSError:
            continue
        for word in words:
            if word.startswith(root) and word.endswith("config.json"):
                found[f"{Path(word).parent.name} (restarted)"] = int(entry.name)
    return found


def _stop(pids: dict[str, int], work_dir: str, timeout_s: float) -> list[str]:
    stopped: list[str] = []
    for name, pid in pids.items():
        if _alive(pid) and _ours(pid, work_dir, name):
            os.kill(pid, signal.SIGCONT)
            os.kill(pid, signal.SIGTERM)
            stopped.append(name)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and any(
        _alive(pids[n]) and _ours(pids[n], work_dir, n) for n in stopped
    ):
        time.sleep(0.05)
    for name in stopped:
        pid = pids[name]
        if _alive(pid) and _ours(pid, work_dir, name):
            os.kill(pid, signal.SIGKILL)
    for name in stopped:
        _reap(pids[name])
    if any(_alive(pids[n]) and _ours(pids[n], work_dir, n) for n in stopped):
        raise ClusterError("some processes of the cluster would not stop")
    return stopped


def _docker_down(state: Path, run_id: str, work_dir: Path) -> list[str]:
    from lab.backends.docker.reaper import down

    removed = down(run_id, work_dir)
    state.unlink()
    return removed


def _reap_docker_leftovers() -> list[str]:
    """Containers of runs whose lab process died, where Docker is there to ask."""
    try:
        from lab.backends.docker.reaper import reap_leftovers
    except ImportError:
        return []
    return [f"leftover run {run_id}" for run_id in reap_leftovers()]


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
