"""RabbitMQ as a target, without a node: its settings, the files and environment it gives a
node, a queue's roles read from the management API's answer, its log lines, and what it
refuses before anything starts."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from lab.ground.errors import UsageError
from lab.ground.faultops import FaultOp
from lab.ground.nodes import ClusterPlan, NodePlan
from lab.ground.spec import Durability, GroupSettings, RunSpec, SideQueue, Workload
from lab.targets.catalog import make_target
from lab.targets.forming import FormsGroup, RunsLocalServices
from lab.targets.protocol import traits_of
from lab.targets.rabbitmq.api import QueueView, role_of
from lab.targets.rabbitmq.config import advanced_config, vm_args
from lab.targets.rabbitmq.logs import parse_rabbitmq_line
from lab.targets.rabbitmq.rules import check_plan, check_run
from lab.targets.rabbitmq.settings import RabbitSettings
from lab.targets.rabbitmq.target import RabbitMQTarget


def _group(**rabbitmq: str) -> GroupSettings:
    return GroupSettings(target_context={"rabbitmq": rabbitmq} if rabbitmq else {})


def _cluster(tmp_path: Path, **rabbitmq: str) -> ClusterPlan:
    nodes = tuple(
        NodePlan(
            f"n{i}",
            5000 + i,
            6000 + i,
            7000 + i,
            tmp_path / f"n{i}" / "data",
            tmp_path / f"n{i}",
            replication_host=f"127.77.27.{88 + i}",
        )
        for i in (1, 2, 3)
    )
    return ClusterPlan(
        "lab", nodes, Durability(), settings=_group(**rabbitmq), services={"epmd": 4399}
    )


# ---- settings ----------------------------------------------------------------------------------


def test_the_defaults_are_a_quorum_queue_with_pause_minority() -> None:
    settings = RabbitSettings.parse({})
    assert (settings.queue_type, settings.partition_handling) == ("quorum", "pause_minority")
    assert not settings.mirrored


def test_a_mirrored_queue_takes_rabbitmqs_own_policy_defaults() -> None:
    settings = RabbitSettings.parse({"queue-type": "mirrored"})
    assert settings.policy() == {
        "ha-mode": "all",
        "ha-sync-mode": "manual",
        "ha-promote-on-failure": "always",
        "ha-promote-on-shutdown": "when-synced",
    }
    given = RabbitSettings.parse(
        {
            "queue-type": "mirrored",
            "ha-sync-mode": "automatic",
            "ha-promote-on-failure": "when-synced",
        }
    )
    assert given.policy()["ha-sync-mode"] == "automatic"
    assert given.policy()["ha-promote-on-failure"] == "when-synced"


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        ({"queue-kind": "quorum"}, "queue-kind: unknown setting"),
        ({"queue-type": "stream"}, "queue-type: one of quorum, mirrored, not 'stream'"),
        ({"ha-sync-mode": "automatic"}, "ha-sync-mode: only with queue-type mirrored"),
        ({"queue-type": "mirrored", "ha-mode": "exactly"}, "ha-mode: all, not 'exactly'"),
        ({"partition-handling": "pause-minority"}, "one of pause_minority, autoheal, ignore"),
        ({"net-ticktime": "1"}, "net-ticktime: whole seconds, 2..120, not '1'"),
    ],
)
def test_a_bad_setting_is_refused_naming_its_key(raw: dict[str, str], says: str) -> None:
    with pytest.raises(UsageError, match=says):
        RabbitSettings.parse(raw)


# ---- what a node is given ----------------------------------------------------------------------


def test_a_node_gets_its_own_name_ports_folders_and_the_runs_port_mapper(tmp_path: Path) -> None:
    target = RabbitMQTarget()
    cluster = _cluster(tmp_path, **{"queue-type": "mirrored", "partition-handling": "autoheal"})
    n2 = cluster.node("n2")
    env = target.node_env(cluster, n2)
    assert env["RABBITMQ_NODENAME"] == "n2@127.77.27.90"
    assert env["RABBITMQ_DIST_PORT"] == "7002"
    assert env["ERL_EPMD_PORT"] == "4399"
    assert env["RABBITMQ_MNESIA_BASE"] == str(n2.data_dir / "mnesia")
    assert env["HOME"] == str(n2.node_dir)
    assert "-start_epmd false" in env["RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS"]
    assert target.local_service(cluster, "epmd") == [
        "epmd",
        "-port",
        "4399",
        "-address",
        "127.0.0.1,127.77.27.89,127.77.27.90,127.77.27.91",
    ]


def test_the_founder_founds_and_the_others_join_it(tmp_path: Path) -> None:
    target = RabbitMQTarget()
    cluster = _cluster(tmp_path, **{"partition-handling": "autoheal"})
    for name in ("n1", "n2"):
        node = cluster.node(name)
        command = target.command(cluster, node) if Path("/usr/lib/rabbitmq").exists() else None
        if command is None:  # no RabbitMQ here: the files alone
            pytest.skip("RabbitMQ is not installed here; the command line needs its script")
        assert command[0] == "env" and command[-1].endswith("rabbitmq-server")
    conf_n1 = (tmp_path / "n1" / "rabbitmq.conf").read_text()
    conf_n2 = (tmp_path / "n2" / "rabbitmq.conf").read_text()
    assert "classic_config.nodes" not in conf_n1
    assert "cluster_formation.classic_config.nodes.1 = n1@127.77.27.89" in conf_n2
    assert "cluster_partition_handling = autoheal" in conf_n2
    assert "listeners.tcp.default = 127.0.0.1:5002" in conf_n2
    assert "log.console.formatter.plaintext.format = $time $level [n2] $msg" in conf_n2
    assert (tmp_path / "n2" / ".erlang.cookie").stat().st_mode & 0o777 == 0o400


def test_the_kernel_settings_name_the_distributions_own_address() -> None:
    settings = RabbitSettings.parse({"net-ticktime": "7"})
    assert advanced_config(settings, "127.77.1.2") == (
        "[{kernel, [{net_ticktime, 7}, {inet_dist_use_interface, {127,77,1,2}}]}].\n"
    )
    assert advanced_config(settings, None) == "[{kernel, [{net_ticktime, 7}]}].\n"
    assert "-start_epmd" not in vm_args(own_epmd=True)


def test_rabbitmq_is_a_target_with_the_abilities_its_nodes_need() -> None:
    target = make_target("rabbitmq")
    assert isinstance(target, RunsLocalServices) and isinstance(target, FormsGroup)
    traits = traits_of(target)
    assert traits.queue_prefix == "/amq/queue/"
    assert dict(traits.settings) == {"queue-type": "quorum", "partition-handling": "pause_minority"}


# ---- roles from the management API ---------------------------------------------------------------


QUORUM = {
    "type": "quorum",
    "leader": "n2@127.77.1.2",
    "members": ["n1@127.77.1.1", "n2@127.77.1.2", "n3@127.77.1.3"],
    "online": ["n1@127.77.1.1", "n2@127.77.1.2"],
}
MIRRORED = {
    "type": "classic",
    "node": "n1@127.0.0.1",
    "slave_nodes": ["n2@127.0.0.1", "n3@127.0.0.1"],
    "synchronised_slave_nodes": ["n3@127.0.0.1"],
}


@pytest.mark.parametrize(
    ("body", "node", "role"),
    [
        (QUORUM, "n2", ("MASTER", "active")),
        (QUORUM, "n1", ("REPLICA", "ready")),
        (QUORUM, "n3", ("REPLICA", "catchup")),  # a member its leader does not count online
        (MIRRORED, "n1", ("MASTER", "active")),
        (MIRRORED, "n3", ("REPLICA", "ready")),
        (MIRRORED, "n2", ("REPLICA", "catchup")),  # an unsynchronised mirror
        ({"type": "classic", "node": "n1@h"}, "n4", ("WAITING", None)),
    ],
)
def test_a_nodes_role_is_the_queues(
    body: dict[str, object], node: str, role: tuple[str, str | None]
) -> None:
    assert role_of(QueueView.of(body).by_node(), node) == role


def test_no_queue_is_no_role_yet() -> None:
    assert role_of(None, "n1") == ("WAITING", None)


# ---- the log -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "code", "role"),
    [
        (
            "2026-12-06T03:02:42.545616+00:00 NOTICE [n2] queue 'lab' in vhost '/': candidate -> "
            "leader in term: 3 machine version: 2",
            "MST-1006",
            "MASTER",
        ),
        (
            "2026-12-06T03:02:42.545616+00:00 INFO [n3] Mirrored queue 'lab' in vhost '/': "
            "Promoting mirror <0.1021.0> to leader",
            "MST-1006",
            "MASTER",
        ),
        (
            "2026-12-06T03:13:15.242763+00:00 ERROR [n1] Mnesia('n1@127.77.104.147'): ** ERROR ** "
            "mnesia_event got {inconsistent_database, running_partitioned_network, 'n2@h'},",
            "RMQ-1002",
            None,
        ),
        (
            "2026-12-06T03:02:42.036987+00:00 INFO [n2] rabbit on node 'n1@127.77.87.106' down",
            "HA-1006",
            None,
        ),
        (
            "2026-12-06T03:02:55.306379+00:00 INFO [n2] rabbit on node 'n1@127.77.87.106' up",
            "HA-1005",
            None,
        ),
        (
            "2026-12-06T03:27:46.4+00:00 WARNING [n1] disk resource limit alarm set on node "
            "'n1@127.77.97.85'.",
            "REF-1002",
            None,
        ),
        (
            "2026-12-06T03:50:35.839018+00:00 INFO [n1] queue 'lab' in vhost '/': detected a new "
            "leader {'%2F_lab','n3@127.77.115.192'} in term 3",
            "RMQ-1007",
            "REPLICA",
        ),
        (
            "2026-12-06T03:13:15.264299+00:00 NOTICE [n1] queue 'lab' in vhost '/': leader -> "
            "follower in term: 2 machine version: 2",
            "RMQ-1009",
            "REPLICA",
        ),
        (
            "2026-12-06T03:50:08.023682+00:00 NOTICE [n1] SIGTERM received - shutting down,",
            "RMQ-1010",
            "WAITING",
        ),
        (
            "2026-12-06T03:13:11.1+00:00 WARNING [n1] Cluster minority/secondary status detected "
            "- awaiting recovery",
            "RMQ-1003",
            "WAITING",
        ),
        (
            "2026-12-06T03:13:11.1+00:00 WARNING [n3] Autoheal: we were selected to restart; "
            "winner is 'n1@h'",
            "RMQ-1004",
            "WAITING",
        ),
    ],
)
def test_the_lines_that_say_what_the_cluster_did_have_codes(
    line: str, code: str, role: str | None
) -> None:
    record = parse_rabbitmq_line(line)
    assert record is not None
    assert (record.code, record.took_role, record.node) == (code, role, line.split("[")[1][:2])


def test_other_lines_are_not_records() -> None:
    assert parse_rabbitmq_line("2026-12-06T03:13:11.1+00:00 INFO [n1] Starting broker...") is None
    assert parse_rabbitmq_line("  Erlang:      25.2.3 [jit]") is None


# ---- refusals --------------------------------------------------------------------------------


def _spec(**changes: object) -> RunSpec:
    return replace(RunSpec("master-failure", 7, target="rabbitmq"), **changes)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("group", "durability", "says"),
    [
        (GroupSettings(designated_primary=("n1",)), Durability(), "RabbitMQ has none of them"),
        (GroupSettings(quorum_override=1), Durability(), "RabbitMQ has none of them"),
        (GroupSettings(mode="active-passive"), Durability(), "no active-passive cluster"),
        (GroupSettings(), Durability(ack_policy="NONE"), "durability triplet does not apply"),
    ],
)
def test_a_group_rabbitmq_cannot_form_is_refused(
    tmp_path: Path, group: GroupSettings, durability: Durability, says: str
) -> None:
    outline = ClusterPlan.outline(("n1", "n2", "n3"), durability, group)
    with pytest.raises(UsageError, match=says):
        check_plan(outline)


@pytest.mark.parametrize(
    ("fault", "says"),
    [
        ("designate_primary", "no designated primary"),
        ("transfer_master", "moves a queue's leader to a chosen node"),
        ("full_gc", "Erlang VMs"),
        ("set_priority", "no election priorities"),
    ],
)
def test_a_fault_rabbitmq_has_nothing_for_is_refused(fault: str, says: str) -> None:
    op = FaultOp(id="f1", action="start", at_s=1.0, fault=fault, target="n1")
    with pytest.raises(UsageError, match=says):
        check_run(_spec(schedule=(op,)))


def test_a_side_queue_or_another_queue_is_refused() -> None:
    with pytest.raises(UsageError, match="one queue of the run's queue type"):
        check_run(_spec(workload=Workload(side=SideQueue("side"))))
    with pytest.raises(UsageError, match="declares the queue 'lab'"):
        check_run(_spec(workload=Workload(queue="other")))


# ---- set-up ------------------------------------------------------------------------------------


def test_a_run_without_rabbitmq_says_so_in_one_line_with_the_install_command(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from lab.cli.main import main
    from lab.targets.rabbitmq import install

    monkeypatch.setattr(install, "installed_version", lambda: None)
    monkeypatch.setattr(install, "can_install", lambda: False)  # not root, or not Debian
    argv = ["run", "master-failure", "--target", "rabbitmq", "--runs-dir", str(tmp_path)]
    assert main(argv) == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line == (
        "lab: error: --target rabbitmq needs RabbitMQ: apt-get install -y --no-install-recommends "
        "rabbitmq-server (as root on Debian the lab does it on first use)"
    )
    assert not any(tmp_path.rglob("spec.json"))  # nothing started, nothing written
