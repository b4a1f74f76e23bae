"""RabbitMQ as a target: an Erlang VM per node, the nodes one RabbitMQ cluster, the run's
queue one replicated queue of the run's type (`queue-type`): a quorum queue (a Raft group of
a member on every node) or a classic queue mirrored on every node (`ha-mode all`).

The lab's roles are the queue's: the node holding its leader (quorum) or master (mirrored)
is MASTER, the others REPLICA, as each node's management API says (lab.targets.rabbitmq.api).
Clients speak AMQP 1.0 to the `rabbitmq_amqp1_0` plugin at the queue's address
`/amq/queue/lab` (an address that declares nothing: the queue is the lab's, declared once
the cluster is whole); the plugin settles a transfer the client sent unsettled only once the
queue has confirmed it, as a 0-9-1 publisher confirm (docs/targets/rabbitmq.md says how this
was checked).

Nodes reach each other over Erlang distribution, found through a port mapper (epmd): on local
processes the lab runs one for the run (`local_services`) and each node listens at its own
address, so that as root a packet filter can cut a pair (lab.backends.process.peer_filter); in
a container a node has its container's own port mapper and is named by its address on the
run's network, and the Docker backend cuts a pair inside the nodes' network namespaces.
"""

from __future__ import annotations

import contextlib
import io
import shlex
import tarfile
from pathlib import Path

from lab.ground.errors import ClusterError, SetupError
from lab.ground.nodes import ClusterPlan, NodePlan, NodeStatus
from lab.ground.ports import HOST
from lab.ground.spec import RunSpec
from lab.targets.management import Credentials
from lab.targets.protocol import ContainerLaunch, LogRecord
from lab.targets.rabbitmq.api import RabbitApi, role_of
from lab.targets.rabbitmq.config import (
    COOKIE,
    ENABLED_PLUGINS,
    NodeConfig,
    advanced_config,
    erlang_name,
    rabbitmq_conf,
    vm_args,
)
from lab.targets.rabbitmq.install import CTL, EPMD, SERVER, VERSION, ensure_rabbitmq
from lab.targets.rabbitmq.logs import LAB_CODES, parse_rabbitmq_line
from lab.targets.rabbitmq.rules import QUEUE, check_plan, check_run, settings_of
from lab.targets.rabbitmq.settings import DEFAULTS, RabbitSettings, failure_timeouts

__all__ = ["DEVIATIONS", "EPMD_SERVICE", "RabbitMQTarget"]

DEVIATIONS = Path(__file__).resolve().parent / "deviations.toml"
CONTAINER_ETC = "/etc/lab/rabbitmq"  # the node's files and HOME in its container
CONTAINER_TAR = "/etc/lab/rabbitmq.tar"
EPMD_SERVICE = "epmd"
MIRRORING_POLICY = "lab-mirrored"
# How long a node's role may take to read: while a member's node is down and not yet found
# so, RabbitMQ's management API answers a queue's view only after its own 2 s wait for that
# member (seen in containers, where a killed node's peers learn of it late).
STATUS_TIMEOUT_S = 3.0


def _node_files(folder: Path, files: dict[str, str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        path = folder / name
        if name == ".erlang.cookie":
            with contextlib.suppress(FileNotFoundError):
                path.chmod(0o600)
        path.write_text(text, encoding="utf-8")
        if name == ".erlang.cookie":
            path.chmod(0o400)  # Erlang refuses a cookie others can read


class RabbitMQTarget:
    """`rabbitmq`: Debian's rabbitmq-server package, unmodified; every node's configuration
    written by the lab (lab.targets.rabbitmq.config)."""

    name = "rabbitmq"
    ready_timeout_s = 240.0  # Erlang VMs boot in 10-20 s on two busy cores, then join
    # A quorum queue elects a new leader within a few seconds of finding its leader's node
    # gone; a mirrored queue promotes as soon as it is told. A killed node is found at
    # once (its connections close); a silent one only after net_ticktime.
    election_allowance_s = 8.0
    restart_allowance_s = 25.0  # a node restarts, recovers its queues and rejoins in 10-25 s
    data_disk_mb = 256
    proxied_peer_links = False  # Erlang distribution: nodes dial each other where epmd says
    # The founder boots alone: a node joining it while its tables are still being made can
    # take half its schema and fail its integrity check at boot (seen on two busy cores).
    founded_by_first_node = True
    deviations_file = DEVIATIONS
    lab_codes = LAB_CODES
    setting_defaults = DEFAULTS
    # Fault windows are drawn against its net_ticktime (at the default), not broker_ref's.
    timeouts = failure_timeouts(RabbitSettings())
    credentials = Credentials()
    queue_prefix = "/amq/queue/"  # the AMQP 1.0 plugin's address of an existing queue
    # 3.10's AMQP 1.0 link drain crashes a classic queue's channel (rabbit_classic_queue has
    # no clause for send_drained): consumers drain over AMQP 0-9-1 instead.
    consumer_options = (
        "--drain-by-get",
        f"{Credentials().user}:{Credentials().password}",
    )
    local_services = (EPMD_SERVICE,)
    version = VERSION

    def prepare(self) -> None:
        """Install Debian's package on first use (as root on Debian), else say how."""
        ensure_rabbitmq()

    def check(self, cluster: ClusterPlan) -> None:
        check_plan(cluster)

    def check_run(self, spec: RunSpec) -> None:
        check_run(spec)

    # -- local processes -----------------------------------------------------------------------

    def local_service(self, cluster: ClusterPlan, name: str) -> list[str]:
        """The run's port mapper, on its port, at 127.0.0.1 and every node's own address."""
        if name != EPMD_SERVICE:
            raise SetupError(f"rabbitmq has no service {name!r}")
        addresses = sorted({HOST, *(p.replication_host for p in cluster.nodes)})
        return [EPMD, "-port", str(cluster.services[name]), "-address", ",".join(addresses)]

    def _founder(self, cluster: ClusterPlan, node: NodePlan) -> str | None:
        first = cluster.node(cluster.members[0])
        return None if node.name == first.name else erlang_name(first.name, first.replication_host)

    def node_env(self, cluster: ClusterPlan, node: NodePlan) -> dict[str, str]:
        """What `rabbitmq-server` (and rabbitmqctl, for this node) is started with."""
        home = node.node_dir
        return {
            "HOME": str(home),
            "RABBITMQ_NODENAME": erlang_name(node.name, node.replication_host),
            "RABBITMQ_USE_LONGNAME": "true",
            "RABBITMQ_DIST_PORT": str(node.replication_port),
            "ERL_EPMD_PORT": str(cluster.services[EPMD_SERVICE]),
            "RABBITMQ_CONFIG_FILE": str(home / "rabbitmq.conf"),
            "RABBITMQ_ADVANCED_CONFIG_FILE": str(home / "advanced.config"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(home / "enabled_plugins"),
            "RABBITMQ_CONF_ENV_FILE": str(home / "rabbitmq-env.conf"),
            "RABBITMQ_MNESIA_BASE": str(node.data_dir / "mnesia"),
            "RABBITMQ_LOG_BASE": str(home / "log"),
            "RABBITMQ_PID_FILE": str(home / "rabbitmq.pid"),
            "ERL_CRASH_DUMP": str(home / "erl_crash.dump"),
            "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS": vm_args(own_epmd=False),
            # The script execs the VM (no shell in between): kill -9 reaches the node itself.
            "RUNNING_UNDER_SYSTEMD": "true",
        }

    def command(self, cluster: ClusterPlan, node: NodePlan) -> list[str]:
        check_plan(cluster)
        if not SERVER.is_file():
            ensure_rabbitmq()
        settings = settings_of(cluster.settings)
        config = NodeConfig(
            node=node.name,
            amqp=f"{HOST}:{node.amqp_port}",
            management_ip=HOST,
            management_port=node.management_port,
            founder=self._founder(cluster, node),
            management_user=self.credentials.user,
            management_password=self.credentials.password,
        )
        _node_files(
            node.node_dir,
            {
                "rabbitmq.conf": rabbitmq_conf(config, settings),
                "advanced.config": advanced_config(settings, node.replication_host),
                "enabled_plugins": ENABLED_PLUGINS,
                "rabbitmq-env.conf": "# the lab gives every setting in the environment\n",
                ".erlang.cookie": COOKIE,
            },
        )
        node.data_dir.mkdir(parents=True, exist_ok=True)
        env = [f"{k}={v}" for k, v in self.node_env(cluster, node).items()]
        return ["env", *env, str(SERVER)]

    def ctl_command(self, cluster: ClusterPlan, node: NodePlan, *args: str) -> list[str]:
        """`rabbitmqctl … ARGS` asked of `node` (on local processes), as its operator would."""
        env = self.node_env(cluster, node)
        keep = ("HOME", "ERL_EPMD_PORT", "RABBITMQ_USE_LONGNAME")
        return [
            "env",
            *(f"{k}={env[k]}" for k in keep),
            str(CTL),
            "-n",
            env["RABBITMQ_NODENAME"],
            "--longnames",
            *args,
        ]

    # -- containers ----------------------------------------------------------------------------

    def container_launch(
        self, cluster: ClusterPlan, node: NodePlan, address_of: dict[str, str]
    ) -> ContainerLaunch:
        """The node named by its address on the run's network (`address_of`), listening on
        every interface of its container, with the port mapper of its own container (it ends
        with the container); its files go in as one tar the command unpacks (a copy is kept
        in the run folder)."""
        check_plan(cluster)
        settings = settings_of(cluster.settings)
        host = {name: address.rpartition(":")[0] for name, address in address_of.items()}
        first = cluster.members[0]
        config = NodeConfig(
            node=node.name,
            amqp=f"0.0.0.0:{node.amqp_port}",
            management_ip="0.0.0.0",
            management_port=node.management_port,
            founder=None if node.name == first else erlang_name(first, host[first]),
            management_user=self.credentials.user,
            management_password=self.credentials.password,
        )
        files = {
            "rabbitmq.conf": rabbitmq_conf(config, settings),
            "advanced.config": advanced_config(settings, host[node.name]),
            "enabled_plugins": ENABLED_PLUGINS,
            "rabbitmq-env.conf": "# the lab gives every setting in the environment\n",
        }
        _node_files(node.node_dir / "etc", files)
        home = CONTAINER_ETC
        env = {
            "HOME": home,
            "RABBITMQ_NODENAME": erlang_name(node.name, host[node.name]),
            "RABBITMQ_USE_LONGNAME": "true",
            "RABBITMQ_DIST_PORT": str(node.replication_port),
            "RABBITMQ_CONFIG_FILE": f"{home}/rabbitmq.conf",
            "RABBITMQ_ADVANCED_CONFIG_FILE": f"{home}/advanced.config",
            "RABBITMQ_ENABLED_PLUGINS_FILE": f"{home}/enabled_plugins",
            "RABBITMQ_CONF_ENV_FILE": f"{home}/rabbitmq-env.conf",
            "RABBITMQ_MNESIA_BASE": f"{node.data_dir}/mnesia",
            "RABBITMQ_LOG_BASE": f"{home}/log",
            "RABBITMQ_PID_FILE": f"{home}/rabbitmq.pid",
            "ERL_CRASH_DUMP": f"{home}/erl_crash.dump",
            "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS": vm_args(own_epmd=True),
            "RUNNING_UNDER_SYSTEMD": "true",
        }
        server = shlex.join(["env", *(f"{k}={v}" for k, v in env.items()), str(SERVER)])
        cookie = f"printf %s {shlex.quote(COOKIE)} > {home}/.erlang.cookie"
        script = (
            f"mkdir -p {home} && tar -xf {CONTAINER_TAR} -C {home} && {cookie} && "
            f"chmod 400 {home}/.erlang.cookie && exec {server}"
        )
        return ContainerLaunch(_tar_of(files), CONTAINER_TAR, ("sh", "-c", script))

    # -- the group, once its nodes run ---------------------------------------------------------

    def api(self, node: NodePlan, timeout_s: float = 5.0) -> RabbitApi:
        return RabbitApi(
            f"http://{HOST}:{node.management_port}", node.name, self.credentials, timeout_s
        )

    def founded(self, cluster: ClusterPlan) -> bool:
        """The founder has booted: its management API lists it running."""
        founder = cluster.node(cluster.members[0])
        try:
            running = self.api(founder, 2.0).running_nodes()
        except ClusterError:
            return False
        return founder.name in _short(running)

    def form_group(self, cluster: ClusterPlan) -> bool:
        """Once every node has joined the founder's cluster, declare the run's queue there
        (and, for a mirrored queue, the policy that mirrors it on every node): True; False
        while a node has not joined yet."""
        founder = cluster.node(cluster.members[0])
        try:
            running = self.api(founder, 2.0).running_nodes()
        except ClusterError:
            return False  # not answering yet
        if not set(cluster.members) <= _short(running):
            return False
        settings = settings_of(cluster.settings)
        api = self.api(founder, 30.0)
        if settings.mirrored:
            api.put_policy(MIRRORING_POLICY, f"^{QUEUE}$", settings.policy())
        api.declare_queue(QUEUE, self._queue_arguments(settings, len(cluster.members)))
        return True

    @staticmethod
    def _queue_arguments(settings: RabbitSettings, members: int) -> dict[str, object]:
        if settings.mirrored:
            return {"x-queue-type": "classic"}
        return {"x-queue-type": "quorum", "x-quorum-initial-group-size": members}

    # -- management and logs -------------------------------------------------------------------

    def status(self, node: NodePlan, timeout_s: float = STATUS_TIMEOUT_S) -> NodeStatus | None:
        try:
            view = self.api(node, timeout_s).queue(QUEUE)
        except ClusterError:
            return None
        role, replica = role_of(None if view is None else view.by_node(), node.name)
        return NodeStatus(name=node.name, role=role, ha_status=replica)

    def parse_log_line(self, line: str) -> LogRecord | None:
        return parse_rabbitmq_line(line)


def _short(names: set[str]) -> set[str]:
    """The lab's node names of Erlang node names (`<node>@<host>`)."""
    return {name.split("@", 1)[0] for name in names}


def _tar_of(files: dict[str, str]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as archive:
        for name, text in sorted(files.items()):
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o600
            archive.addfile(info, io.BytesIO(data))
    return out.getvalue()
