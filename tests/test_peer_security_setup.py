"""broker_ref's security keys in a node's configuration, the lab's per-run secret and
certificates on both backends, and real groups that use them (the handshake itself:
test_peer_auth.py)."""

from __future__ import annotations

import asyncio
import json
import ssl
import stat
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from group_helpers import LocalGroup
from proton import Message
from proton.utils import BlockingConnection

from broker_ref.config import parse_config
from broker_ref.errors import ConfigError
from lab.backends.docker.node_config import container_node_plan
from lab.ground.nodes import ClusterPlan, NodePlan
from lab.ground.spec import Durability, GroupSettings
from lab.targets.broker_ref import BrokerRefTarget, node_config
from lab.targets.broker_ref_security import group_secret, tls_files
from lab.targets.management import Credentials

SECRET = "a" * 32
OTHER = "b" * 32


# ---- configuration -------------------------------------------------------------------------


def _raw(**extra: Any) -> dict[str, Any]:
    return {"name": "n1", "amqp_port": 1, "management_port": 2, "data_dir": "d", **extra}


def test_the_security_keys_are_checked(tmp_path: Path) -> None:
    assert parse_config(_raw()).group_secret == ""
    assert parse_config(_raw(group_secret=SECRET)).group_secret == SECRET
    with pytest.raises(ConfigError, match="16 characters or more"):
        parse_config(_raw(group_secret="short"))
    with pytest.raises(ConfigError, match="'tls_cert_file' is required"):
        parse_config(_raw(replication_tls=True))
    with pytest.raises(ConfigError, match="no such file"):
        parse_config(
            _raw(replication_tls=True, tls_cert_file="c", tls_key_file="k", tls_ca_file="a"),
            base_dir=tmp_path,
        )
    for name in ("c", "k", "a"):
        (tmp_path / name).write_text("x")
    config = parse_config(
        _raw(management_tls=True, tls_cert_file="c", tls_key_file="k", tls_ca_file="a"),
        base_dir=tmp_path,
    )
    assert config.management_tls and not config.replication_tls
    assert config.tls_cert_file == str(tmp_path / "c")


# ---- the lab's side ------------------------------------------------------------------------


def test_the_lab_makes_one_secret_per_run_and_writes_it_in_every_config(tmp_path: Path) -> None:
    nodes = tmp_path / "nodes"
    secret = group_secret(nodes)
    assert len(secret) == 64 and group_secret(nodes) == secret
    assert stat.S_IMODE((nodes / "group_secret").stat().st_mode) == 0o600
    assert group_secret(tmp_path / "other") != secret
    plans = tuple(NodePlan(n, 1, 2, 3, nodes / n / "data", nodes / n) for n in ("n1", "n2", "n3"))
    cluster = ClusterPlan("lab", plans, Durability(), settings=GroupSettings())
    assert BrokerRefTarget(group_secret=False).security(plans[0]) == {}
    target = BrokerRefTarget()  # the secret is on by default
    configs = [node_config(cluster, p, Credentials(), security=target.security(p)) for p in plans]
    assert {c["group_secret"] for c in configs} == {secret}
    parse_config(configs[0])  # broker_ref takes it


def test_both_backends_get_the_secret_in_a_config_only_its_owner_reads(tmp_path: Path) -> None:
    nodes = tmp_path / "nodes"
    plans = tuple(NodePlan(n, 1, 2, 3, nodes / n / "data", nodes / n) for n in ("n1", "n2"))
    for plan in plans:
        plan.node_dir.mkdir(parents=True)
    cluster = ClusterPlan("lab", plans, Durability(), settings=GroupSettings())
    path = plans[0].node_dir / "config.json"
    path.write_text("{}")
    path.chmod(0o644)  # a config a restart rewrites is made private too
    target = BrokerRefTarget()
    target.command(cluster, plans[0])
    on_disk = json.loads(path.read_text())
    assert on_disk["group_secret"] == group_secret(nodes)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    inside = ClusterPlan(
        "lab",
        tuple(container_node_plan(p.name, p.node_dir) for p in plans),
        Durability(),
        settings=GroupSettings(),
    )
    launch = target.container_launch(inside, inside.node("n2"), {})
    assert json.loads(launch.config)["group_secret"] == group_secret(nodes)
    assert stat.S_IMODE((nodes / "n2" / "config.json").stat().st_mode) == 0o600


def test_the_lab_issues_certificates_that_verify_each_other(tmp_path: Path) -> None:
    one, two = tls_files(tmp_path, "n1"), tls_files(tmp_path, "n2")
    assert one.ca == two.ca and tls_files(tmp_path, "n1") == one
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(one.cert, one.key)
    server.load_verify_locations(one.ca)
    server.verify_mode = ssl.CERT_REQUIRED
    client = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    client.load_cert_chain(two.cert, two.key)
    client.load_verify_locations(two.ca)
    names: dict[str, Any] = {}

    async def run() -> None:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            names["client"] = writer.get_extra_info("peercert")
            writer.close()

        srv = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=server)
        port = srv.sockets[0].getsockname()[1]
        _, writer = await asyncio.open_connection(
            "127.0.0.1", port, ssl=client, server_hostname="n1"
        )
        await asyncio.sleep(0.1)
        writer.close()
        with pytest.raises(ssl.SSLCertVerificationError):
            await asyncio.open_connection("127.0.0.1", port, ssl=client, server_hostname="n3")
        srv.close()

    asyncio.run(run())
    assert ("DNS", "n2") in names["client"]["subjectAltName"]


# ---- real groups ---------------------------------------------------------------------------


def _send(port: int, count: int, prefix: str) -> None:
    conn = BlockingConnection(f"127.0.0.1:{port}", timeout=10)
    try:
        sender = conn.create_sender("q")
        for i in range(count):
            sender.send(Message(id=f"{prefix}-{i}", body=b"x" * 100, durable=True), timeout=10)
    finally:
        conn.close()


def _until(test: Callable[[], bool], timeout_s: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if test():
            return True
        time.sleep(0.1)
    return test()


@pytest.mark.processes
def test_a_group_with_a_secret_replicates_and_refuses_a_member_with_another(
    make_group: Callable[..., LocalGroup],
) -> None:
    group = make_group(3, all={"group_secret": SECRET}, n3={"group_secret": OTHER}, start=False)
    group.configs["n3"]["group_secret"] = OTHER  # n3 was told the wrong secret
    for name in group.configs:
        group.start(name)
    master = group.wait_for(
        lambda r: sorted(r.get(n, "") for n in ("n1", "n2")) == ["MASTER", "REPLICA"]
    )
    leader = next(n for n, r in master.items() if r == "MASTER")
    _send(group.ports[leader][0], 20, "s")
    assert _until(
        lambda: all(group.request(n)[1]["queues"]["q"]["depth"] == 20 for n in ("n1", "n2"))
    )
    assert group.request("n3")[1]["queues"].get("q", {"depth": 0})["depth"] == 0
    assert group.roles()["n3"] != "MASTER"
    assert _until(lambda: "REF-1009" in group.oplog("n1") and "REF-1009" in group.oplog("n3"))
    # each refuses the other's hello, and each dialler is told so
    assert "node 'n3' : wrong proof of the group secret" in group.oplog("n1")
    assert "node 'n1' : wrong proof of the group secret" in group.oplog("n3")
    told = "REF-2012 : Client closed connection with 320 : wrong proof of the group secret"
    assert told in group.oplog("n1") and told in group.oplog("n3")
    for name in group.configs:
        assert SECRET not in group.oplog(name) and OTHER not in group.oplog(name)


@pytest.mark.processes
def test_a_group_over_tls_replicates_and_serves_https(
    make_group: Callable[..., LocalGroup], tmp_path: Path
) -> None:
    certs = tmp_path / "certs"
    settings: dict[str, Any] = {
        "all": {"group_secret": SECRET, "replication_tls": True, "management_tls": True}
    }
    for name in ("n1", "n2", "n3"):
        settings[name] = tls_files(certs, name).config()
    group = make_group(3, start=False, **settings)
    for name in group.configs:
        group.start(name)
    context = ssl.create_default_context(cafile=str(certs / "tls" / "ca.crt"))

    def attributes(name: str) -> dict[str, Any]:
        request = urllib.request.Request(
            f"https://127.0.0.1:{group.ports[name][1]}/api/latest/virtualhostnode/{name}",
            headers={"Authorization": "Basic YWRtaW46YWRtaW4="},
        )
        with urllib.request.urlopen(request, timeout=5, context=context) as reply:
            return dict(json.loads(reply.read()))

    def roles() -> list[str]:
        try:
            return sorted(attributes(n)["role"] for n in group.configs)
        except OSError:
            return []

    assert _until(lambda: roles() == ["MASTER", "REPLICA", "REPLICA"], 30)
    leader = next(n for n in group.configs if attributes(n)["role"] == "MASTER")
    _send(group.ports[leader][0], 20, "t")
    assert _until(lambda: all(attributes(n)["queues"]["q"]["depth"] == 20 for n in group.configs))
    with pytest.raises(OSError):  # plain HTTP is not served
        urllib.request.urlopen(f"http://127.0.0.1:{group.ports['n1'][1]}/health", timeout=5)
    assert _until(lambda: "REF-1010" in group.oplog("n1"))
