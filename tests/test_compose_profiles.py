"""docker-compose.yml's default profile (a broker_ref group) and its `broker-j` profile
(Apache Qpid Broker-J): each brought up under its own project and label, a message through
the master, links cut and restored through the profile's Toxiproxy, everything removed.

The Broker-J profile's node configurations are checked against what the lab's Broker-J
target writes, without Docker."""

from __future__ import annotations

import contextlib
import json
import re
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from compose_helpers import (
    BROKERJ_ADDRESSES,
    COMPOSE_FILE,
    NAMES,
    brokerj_config_path,
    brokerj_launches,
    closed,
    compose_ready,
    get_json,
    one_master,
    profile_up,
    retry,
    roles,
    say,
    set_proxy,
    wait_for,
)
from proton.utils import BlockingConnection

from lab.bench.probe import send_one


def _receive_one(url: str, queue: str, timeout_s: float = 10.0) -> str:
    conn = BlockingConnection(url, timeout=timeout_s)
    try:
        receiver = conn.create_receiver(queue)
        message = receiver.receive(timeout=timeout_s)
        receiver.accept()
        return str(message.id)
    finally:
        conn.close()


def _round_trip(url: str) -> None:
    queue = f"q-{uuid.uuid4().hex[:8]}"
    sent = send_one(url, queue=queue)
    assert _receive_one(url, queue) == sent


def _txid(port: int, name: str) -> int:
    body = get_json(port, f"/api/latest/virtualhostnode/{name}")
    return int(body["lastKnownReplicationTransactionId"])


def _cut_client_link(toxiproxy: int, master: str, amqp: int) -> None:
    """A disabled client proxy closes its port; enabled again, the master takes messages."""
    set_proxy(toxiproxy, f"client_to_{master}", False)
    assert closed(amqp), f"{master}'s client port still answers AMQP"
    with pytest.raises(Exception):  # noqa: B017 - refused, however proton words it
        send_one(f"amqp://127.0.0.1:{amqp}", timeout_s=3)
    set_proxy(toxiproxy, f"client_to_{master}", True)
    assert not closed(amqp), f"{master}'s client port is still closed"
    retry(lambda: _round_trip(f"amqp://127.0.0.1:{amqp}"), "a message through the master")


# -- the broker_ref group (no profile) ---------------------------------------------------------


def _default_variables() -> list[str]:
    return [
        "LAB_TOXIPROXY_PORT",
        *(f"LAB_{n.upper()}_AMQP_PORT" for n in NAMES),
        *(f"LAB_{n.upper()}_MANAGEMENT_PORT" for n in NAMES),
    ]


@pytest.mark.docker
def test_the_default_group_takes_messages_and_a_cut_replica_falls_behind() -> None:
    engine = compose_ready()
    services = ("toxiproxy", *NAMES)
    with profile_up(engine, "default", _default_variables(), None, services) as up:
        management = {n: up.ports[f"LAB_{n.upper()}_MANAGEMENT_PORT"] for n in NAMES}
        amqp = {n: up.ports[f"LAB_{n.upper()}_AMQP_PORT"] for n in NAMES}
        toxiproxy = up.ports["LAB_TOXIPROXY_PORT"]
        seen = wait_for(lambda: roles(management), one_master, "one master, two replicas")
        master = next(n for n, r in seen.items() if r == "MASTER")
        _round_trip(f"amqp://127.0.0.1:{amqp[master]}")
        _cut_client_link(toxiproxy, master, amqp[master])

        # Cut one replica off from both others: the group goes on without it.
        replica = next(n for n in NAMES if n != master)
        links = [f"{a}_to_{b}" for a in NAMES for b in NAMES if a != b and replica in (a, b)]
        for link in links:
            set_proxy(toxiproxy, link, False)
        # Read after the cut: a record already on its way then may still land; none sent
        # after it can.
        at_cut = _txid(management[master], master)
        for _ in range(3):
            send_one(f"amqp://127.0.0.1:{amqp[master]}")
        target = _txid(management[master], master)
        assert target > at_cut
        third = next(n for n in NAMES if n not in (master, replica))
        wait_for(lambda: _txid(management[third], third), lambda t: t >= target, "replication")
        time.sleep(1.0)  # ten heartbeats: a replica still linked has caught up by now
        assert _txid(management[replica], replica) <= at_cut, "a cut replica still received"
        for link in links:
            set_proxy(toxiproxy, link, True)
        wait_for(
            lambda: (roles(management), _txid(management[replica], replica)),
            lambda s: one_master(s[0]) and s[1] >= target,
            "the replica caught up after its links came back",
        )


# -- the broker-j profile ----------------------------------------------------------------------


def test_the_brokerj_profile_runs_what_the_brokerj_target_writes(tmp_path: Path) -> None:
    """containers/compose/bj-n*.json and the nodes' command are the target's own, with the
    profile's replication addresses (rewrite them: .venv/bin/python tests/compose_helpers.py)."""
    launches = brokerj_launches(tmp_path)
    text = COMPOSE_FILE.read_text(encoding="utf-8")
    commands = re.findall(r"^  command: (\[\"java\".*\])$", text, flags=re.MULTILINE)
    assert len(commands) == 1, "one Broker-J command line in docker-compose.yml"
    for name, (config, command) in launches.items():
        on_disk = json.loads(brokerj_config_path(name).read_text(encoding="utf-8"))
        assert on_disk == config, f"{brokerj_config_path(name)} differs from the target's"
        [vhn] = on_disk["virtualhostnodes"]
        assert vhn["address"] == BROKERJ_ADDRESSES[name]
        assert vhn["helperAddress"] == BROKERJ_ADDRESSES["n1"]
        assert vhn["permittedNodes"] == [BROKERJ_ADDRESSES[n] for n in NAMES]
        assert [p["protocols"] for p in on_disk["ports"]] == [["AMQP_1_0"], ["HTTP"]]
        assert json.loads(commands[0]) == list(command)
    proxies = json.loads((COMPOSE_FILE.parent / "containers/compose/bj-toxiproxy.json").read_text())
    forwarded = {p["listen"].split(":")[1]: p["upstream"] for p in proxies}
    for i, name in enumerate(NAMES, start=1):
        port = BROKERJ_ADDRESSES[name].split(":")[1]
        assert forwarded[port] == f"bj{i}:{port}"
    assert f"aliases: [bj-toxiproxy, {', '.join(f'{n}-replication' for n in NAMES)}]" in text


def _brokerj_variables() -> list[str]:
    return [
        "LAB_BJ_TOXIPROXY_PORT",
        *(f"LAB_BJ{i}_AMQP_PORT" for i in (1, 2, 3)),
        *(f"LAB_BJ{i}_MANAGEMENT_PORT" for i in (1, 2, 3)),
    ]


@pytest.mark.docker
@pytest.mark.brokerj
def test_the_brokerj_profile_fails_over_when_the_master_is_cut_off() -> None:
    engine = compose_ready(("qpid-broker-j",))
    services = ("bj-toxiproxy", "bj1", "bj2", "bj3")
    with profile_up(engine, "broker-j", _brokerj_variables(), "broker-j", services) as up:
        management = {n: up.ports[f"LAB_BJ{i}_MANAGEMENT_PORT"] for i, n in enumerate(NAMES, 1)}
        amqp = {n: up.ports[f"LAB_BJ{i}_AMQP_PORT"] for i, n in enumerate(NAMES, 1)}
        toxiproxy = up.ports["LAB_BJ_TOXIPROXY_PORT"]
        seen: dict[str, Any] = wait_for(
            lambda: roles(management), one_master, "one master, two replicas", 180.0
        )
        master = next(n for n, r in seen.items() if r == "MASTER")
        retry(lambda: _round_trip(f"amqp://127.0.0.1:{amqp[master]}"), "a first message", 60.0)
        _cut_client_link(toxiproxy, master, amqp[master])

        # Every connection to the master's replication address runs through to_<master>:
        # cut, the replicas lose their stream and elect one of themselves.
        set_proxy(toxiproxy, f"to_{master}", False)
        seen = wait_for(
            lambda: roles(management),
            lambda s: any(s[n] == "MASTER" for n in NAMES if n != master),
            "a new master among the replicas",
            60.0,
        )
        new = next(n for n in NAMES if n != master and seen[n] == "MASTER")
        say(f"broker-j: {master} cut off, {new} elected")
        retry(lambda: _round_trip(f"amqp://127.0.0.1:{amqp[new]}"), "a message via the new master")
        set_proxy(toxiproxy, f"to_{master}", True)
        wait_for(lambda: roles(management), one_master, "the old master rejoined", 120.0)


def test_the_lab_installs_docker_compose_with_the_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the lab sets up Docker itself, it installs docker-compose in the same apt-get."""
    from lab.backends.docker import engine
    from lab.ground.errors import SetupError

    answers = iter([False, False, True])
    asked: list[dict[str, str]] = []

    def connect(timeout_s: float = 60.0) -> str:
        if not next(answers):
            raise SetupError("no engine")
        return "client"

    monkeypatch.setattr(engine, "connect", connect)
    monkeypatch.setattr(engine, "can_install", lambda: True)
    monkeypatch.setattr(engine, "_install_lock", contextlib.nullcontext)
    monkeypatch.setattr(engine, "_install_missing", lambda wanted, say: asked.append(wanted))
    monkeypatch.setattr(engine, "_start_dockerd", lambda say: None)
    assert engine.ensure_engine(say) == "client"
    assert asked == [{"dockerd": "docker.io", "docker-compose": "docker-compose"}]
