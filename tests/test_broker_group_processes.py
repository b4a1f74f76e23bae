"""Real broker_ref groups of node processes talking to each other directly (no Toxiproxy)."""

from __future__ import annotations

import base64
import json
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from proton import Message
from proton.utils import BlockingConnection

from broker_ref.roles import Role

REPO = Path(__file__).resolve().parent.parent


# ---- real groups ---------------------------------------------------------------------------------


def _free_ports(count: int) -> list[int]:
    socks = [socket.socket() for _ in range(count)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


class _Group:
    def __init__(self, root: Path, size: int, **settings: Any) -> None:
        self.root = root
        names = [f"n{i}" for i in range(1, size + 1)]
        ports = _free_ports(3 * size)
        self.ports = {
            n: (ports[3 * i], ports[3 * i + 1], ports[3 * i + 2]) for i, n in enumerate(names)
        }
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.configs: dict[str, dict[str, Any]] = {}
        for name in names:
            amqp, mgmt, repl = self.ports[name]
            config = {
                "name": name,
                "amqp_port": amqp,
                "management_port": mgmt,
                "replication_port": repl,
                "data_dir": str(root / name / "data"),
                "peers": {p: f"127.0.0.1:{self.ports[p][2]}" for p in names if p != name},
            }
            config.update(settings.get(name, {}))
            config.update(settings.get("all", {}))
            self.configs[name] = config

    def start(self, name: str) -> None:
        node_dir = self.root / name
        node_dir.mkdir(parents=True, exist_ok=True)
        path = node_dir / "config.json"
        path.write_text(json.dumps(self.configs[name]))
        with open(node_dir / "stdout.log", "ab") as out, open(node_dir / "stderr.log", "ab") as err:
            self.procs[name] = subprocess.Popen(
                [sys.executable, "-m", "broker_ref", "--config", str(path)],
                stdout=out,
                stderr=err,
                cwd=REPO,
            )

    def kill(self, name: str) -> None:
        proc = self.procs[name]
        proc.send_signal(signal.SIGKILL)
        proc.wait()

    def stop_all(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    def request(
        self,
        name: str,
        method: str = "GET",
        body: Any = None,
        auth: str = "admin:admin",
        what: str = "virtualhostnode",
    ) -> tuple[int, Any]:
        url = f"http://127.0.0.1:{self.ports[name][1]}/api/latest/{what}/{name}"
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(url, data=data, method=method)
        req.add_header("Authorization", "Basic " + base64.b64encode(auth.encode()).decode())
        req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=5) as reply:
                return reply.status, json.loads(reply.read() or b"null")
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"null")
        except OSError:
            return 0, None

    def roles(self) -> dict[str, str]:
        found = {}
        for name, proc in self.procs.items():
            if proc.poll() is None:
                status, body = self.request(name)
                found[name] = body["role"] if status == 200 else "?"
        return found

    def wait_for(
        self, test: Callable[[dict[str, str]], bool], timeout_s: float = 20.0
    ) -> dict[str, str]:
        deadline = time.monotonic() + timeout_s
        roles: dict[str, str] = {}
        while time.monotonic() < deadline:
            roles = self.roles()
            if test(roles):
                return roles
            time.sleep(0.1)
        raise AssertionError(f"roles never settled: {roles}")

    def master(self) -> str:
        roles = self.wait_for(
            lambda r: (
                list(r.values()).count("MASTER") == 1
                and all(v in ("MASTER", "REPLICA") for v in r.values())
            )
        )
        return next(n for n, r in roles.items() if r == "MASTER")

    def oplog(self, name: str) -> str:
        return (self.root / name / "stdout.log").read_text()


@pytest.fixture
def make_group(tmp_path: Path) -> Iterator[Callable[..., _Group]]:
    groups: list[_Group] = []

    def make(size: int, start: bool = True, **settings: Any) -> _Group:
        group = _Group(tmp_path / f"g{len(groups)}", size, **settings)
        groups.append(group)
        if start:
            for name in group.configs:
                group.start(name)
        return group

    yield make
    for group in groups:
        group.stop_all()


def _send(port: int, count: int, prefix: str) -> None:
    conn = BlockingConnection(f"127.0.0.1:{port}", timeout=10)
    try:
        sender = conn.create_sender("q")
        for i in range(count):
            sender.send(Message(id=f"{prefix}-{i}", body=b"x" * 100, durable=True), timeout=10)
    finally:
        conn.close()


@pytest.mark.processes
def test_a_group_elects_one_master_replicates_and_fails_over(
    make_group: Callable[..., _Group],
) -> None:
    group = make_group(3)
    master = group.master()
    _send(group.ports[master][0], 30, "a")
    time.sleep(0.5)
    depths = {n: group.request(n)[1]["queues"]["q"]["depth"] for n in group.configs}
    assert depths == {n: 30 for n in group.configs}
    replica = next(n for n in group.configs if n != master)
    assert group.request(replica)[1]["role"] == "REPLICA"
    group.kill(master)
    new_master = group.master()
    assert new_master != master
    _send(group.ports[new_master][0], 5, "b")
    assert group.request(new_master)[1]["queues"]["q"]["depth"] == 35
    group.start(master)
    group.wait_for(lambda r: r.get(master) == "REPLICA")
    time.sleep(0.5)
    assert group.request(master)[1]["queues"]["q"]["depth"] == 35
    assert "HA-1010" in group.oplog(new_master) and "MST-1006" in group.oplog(new_master)


@pytest.mark.processes
def test_management_validates_and_authenticates(make_group: Callable[..., _Group]) -> None:
    group = make_group(3)
    master = group.master()
    replica = next(n for n in group.configs if n != master)
    bad = [
        {"priority": 7},
        {"quorumOverride": 4},
        {"designatedPrimary": True},
        {"role": "REPLICA"},
        {"colour": "blue"},
    ]
    for change in bad:
        status, body = group.request(replica, "POST", change)
        assert status == 422, change
        assert body["errorMessage"]
    assert group.request(replica, "POST", {"priority": 3}, auth="admin:nope")[0] == 401
    assert group.request(replica)[1]["priority"] == 1
    for value in (2, 3, 0, 2):  # a change answered 200 is applied: the next read sees it
        assert group.request(replica, "POST", {"priority": value})[0] == 200
        assert group.request(replica)[1]["priority"] == value
    deadline = time.monotonic() + 5
    while True:  # the view is as fresh as the last heartbeat
        view = group.request(replica, what="remotereplicationnode")[1]
        if {v["role"] for v in view} == {"MASTER", "REPLICA"} or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert sorted(v["name"] for v in view) == sorted(n for n in group.configs if n != replica)
    assert {v["role"] for v in view} == {"MASTER", "REPLICA"}


@pytest.mark.processes
def test_transfer_master_moves_mastership(make_group: Callable[..., _Group]) -> None:
    group = make_group(3)
    master = group.master()
    chosen = next(n for n in group.configs if n != master)
    _send(group.ports[master][0], 10, "t")
    assert group.request(chosen, "POST", {"role": "MASTER"})[0] == 200
    group.wait_for(lambda r: r.get(chosen) == "MASTER" and r.get(master) == "REPLICA")
    assert "HA-1007" in group.oplog(master)
    assert group.request(chosen)[1]["queues"]["q"]["depth"] == 10


@pytest.mark.processes
def test_an_intruder_is_refused(make_group: Callable[..., _Group]) -> None:
    group = make_group(3, all={"permitted_nodes": ["n1", "n2", "n3"]})
    group.master()
    stranger = make_group(2, start=False)
    config = stranger.configs["n1"]
    config["name"] = "n9"
    config["peers"] = {"n1": f"127.0.0.1:{group.ports['n1'][2]}"}
    config["permitted_nodes"] = ["n9", "n1"]
    stranger.configs = {"n9": config}
    stranger.start("n9")
    deadline = time.monotonic() + 10
    while "HA-1008" not in group.oplog("n1") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "Intruder detected : Node 'n9'" in group.oplog("n1")
    assert group.roles()["n1"] in ("MASTER", "REPLICA")


@pytest.mark.processes
def test_both_nodes_designated_primary_refuse_to_start(make_group: Callable[..., _Group]) -> None:
    group = make_group(2, all={"designated_primary": True})
    for proc in group.procs.values():
        assert proc.wait(timeout=20) == 2
    assert "both nodes of the group are designated primary" in group.oplog("n1") + group.oplog("n2")


@pytest.mark.processes
def test_quorum_loss_stops_service_and_override_restores_it(
    make_group: Callable[..., _Group],
) -> None:
    group = make_group(3)
    master = group.master()
    _send(group.ports[master][0], 5, "q")
    others = [n for n in group.configs if n != master]
    group.kill(master)
    group.kill(others[0])
    survivor = others[1]
    time.sleep(2.0)
    assert group.request(survivor)[1]["role"] == "WAITING"
    with pytest.raises(Exception):  # noqa: B017 - refused or closed: no service
        _send(group.ports[survivor][0], 1, "refused")
    assert group.request(survivor, "POST", {"quorumOverride": 1})[0] == 200
    group.wait_for(lambda r: r.get(survivor) == "MASTER")
    _send(group.ports[survivor][0], 1, "after")
    assert group.request(survivor)[1]["queues"]["q"]["depth"] == 6
    assert Role.MASTER.value == "MASTER"
