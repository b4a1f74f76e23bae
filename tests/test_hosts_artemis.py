"""Artemis on hosts, against a rig of namespaces: each broker on a host of its own, shipped
and started over SSH, its activation decided by the lab's ZooKeeper (`zookeeper=lab`, on this
machine, reached from each host through its SSH connection), a killed primary's backup taking
over, everything gone afterwards. Long (`--lab-long`): three JVMs and a ZooKeeper on two
cores, about two minutes; and, in the default suite, what hosts cannot carry refused by the
command line before anything starts."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from hosts_helpers import on_host, rig_of

from lab.compose import parts_for
from lab.ground.children import process_alive
from lab.run.runner import RunOutcome, run_scenario

pytestmark = [pytest.mark.hosts, pytest.mark.artemis]

LEFT = "find /srv/lab -mindepth 1 | wc -l; ps -eo args | grep -c '[s]rv/lab/lab-' || true"
LAB_ZK = {"lock-manager": "zookeeper", "zookeeper": "lab"}


@pytest.mark.long
@pytest.mark.processes
def test_a_killed_primarys_backup_takes_over_through_the_labs_zookeeper(
    tmp_path: Path, lab_deviation: Callable[[RunOutcome], str]
) -> None:
    with rig_of(3, tmp_path / "rig") as (_, hosts_file, inventory):
        parts = parts_for("primary-failure", "ssh", "artemis", hosts_file=hosts_file)
        spec = parts.scenario.spec(7, backend="ssh", target=parts.target)
        outcome = run_scenario(spec.with_target_settings(LAB_ZK), parts, tmp_path / "runs")
        folder = outcome.folder.path
        events = [json.loads(line) for line in (folder / "events.jsonl").read_text().splitlines()]
        starts = {e["node"]: e["host"] for e in events if e["kind"] == "node.start"}
        assert starts["n1"] == "h1" and starts["n2"] == "h2"
        (service,) = [e for e in events if e["kind"] == "service.start"]
        assert service["service"] == "zookeeper"
        assert any(e["kind"] == "service.stop" for e in events)
        assert not process_alive(service["pid"])
        roles = [(e["node"], e["role"]) for e in events if e["kind"] == "node.role"]
        assert ("n1", "MASTER") in roles
        assert any(node != "n1" and role == "MASTER" for node, role in roles), roles
        assert outcome.check.acknowledged > 0 and outcome.check.lost.count == 0
        zoo = (folder / "services" / "zookeeper" / "zoo.cfg").read_text()
        assert "clientPortAddress=127.0.0.1" in zoo
        broker = (folder / "nodes" / "n2" / "etc" / "broker.xml").read_text()
        assert 'value="127.0.0.1:' in broker  # the host's end of the forward, not this machine's
        for node in ("n1", "n2", "n3"):
            assert on_host(inventory, node, LEFT).split() == ["0", "0"], node
    note = lab_deviation(outcome)  # a deviation Artemis declares ends the test as xfail
    assert outcome.verdict.held, f"{outcome.summary}\n{outcome.reproduce}\n{note}"


@pytest.mark.parametrize(
    ("settings", "says"),
    [
        ((), "a file lock cannot span machines"),
        (("activation=quorum-voting",), "quorum-voting on hosts"),
    ],
)
def test_what_hosts_cannot_carry_is_refused_before_anything_starts(
    lab: Callable[..., object], tmp_path: Path, settings: tuple[str, ...], says: str
) -> None:
    (tmp_path / "key").write_text("not used: refused before any connection\n")
    (tmp_path / "known_hosts").write_text("")
    hosts = tmp_path / "hosts.toml"
    # benchmarking addresses (RFC 2544), never dialled: the refusal comes before any SSH
    head = 'networks = ["198.18.251.0/24"]\nkey = "key"\nknown_hosts = "known_hosts"\n'
    each = [f'[[host]]\naddress = "198.18.251.{i + 10}"\nnode = "n{i}"\n' for i in (1, 2, 3)]
    hosts.write_text(head + "".join(each), encoding="utf-8")
    flags = [arg for setting in settings for arg in ("--target-setting", setting)]
    done = lab(
        "run", "primary-failure", "--target", "artemis", "--backend", "ssh", "--hosts",
        str(hosts), "--seed", "1", "--runs-dir", "runs", *flags, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr  # type: ignore[attr-defined]
    lines = done.stderr.strip().splitlines()  # type: ignore[attr-defined]
    assert says in lines[-1] and lines[-1].startswith("lab: error:"), lines
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").rglob("spec.json"))
