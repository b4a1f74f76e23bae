"""An Artemis broker's instance folder, written by the lab (what `artemis create` would make,
cut to what a node needs), as pure functions of one `BrokerPlan`.

    etc/broker.xml          the broker: journal, acceptors, connectors, cluster connection,
                            HA policy (replication: primary or backup, by lock manager or by
                            quorum vote), security, queues created on first use
    etc/bootstrap.xml       JAAS domain, the broker, the web server with its console (whose
                            Jolokia endpoint, /console/jolokia, is the lab's management API)
    etc/login.config        JAAS: the management user from a properties file; everyone else
                            a guest (clients connect with anonymous SASL)
    etc/management.xml      who may read and invoke MBeans over Jolokia (the management role)
    etc/jolokia-access.xml  Jolokia's origins (127.0.0.1)
    etc/log4j2.properties   one console line per event, `<time> <LEVEL> [<node>] [<logger>] <text>`
    etc/hosts               the names a node dials its peers by (lab.backends.process: each
                            resolves to the pair's proxy); none in containers

The C++ broker's active-passive settings map onto the cluster connection (its document's
names first):

    link-heartbeat-interval      check-period (a ping every interval) and connection-ttl
                                 (twice it: a silent peer is dead, as the document says of a
                                 backup that misses two heartbeats)
    link-maintenance-interval    retry-interval and retry-replication-wait (how soon a backup
                                 tries again to reach its primary)
    ha-username / ha-password    cluster-user / cluster-password (a backup with another
                                 password cannot join its primary's cluster)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

from lab.ground.cluster_settings import ActivePassiveSettings
from lab.targets.artemis.settings import ArtemisSettings

__all__ = [
    "CLUSTER_USER",
    "FILE_LOCK_MANAGER",
    "BrokerPlan",
    "bootstrap_xml",
    "broker_xml",
    "etc_files",
    "hosts_file",
]

CLUSTER_USER = "lab-cluster"
FILE_LOCK_MANAGER = "org.apache.activemq.artemis.lockmanager.file.FileBasedLockManager"
ZOOKEEPER_LOCK_MANAGER = (
    "org.apache.activemq.artemis.lockmanager.zookeeper.CuratorDistributedLockManager"
)
ROLE = "amq"  # the role of the management user and of the guests
JOURNAL_FILE_SIZE = "1M"  # small files: a backup's initial copy is sent file by file


@dataclass(frozen=True)
class BrokerPlan:
    """Everything one broker's configuration is made of.

    `advertised` is the host:port the broker announces to its cluster (where its peers dial
    it), `peers` each peer's host:port as this broker dials it (its static connectors).
    `group` pairs a backup with its primary (Artemis's group-name)."""

    name: str
    primary: bool
    group: str
    data_dir: Path
    etc_dir: Path
    bind_host: str
    amqp_port: int
    cluster_port: int
    http_port: int
    advertised: str
    peers: Mapping[str, str]
    cluster_password: str
    settings: ArtemisSettings
    timings: ActivePassiveSettings
    locks_dir: Path | None = None
    hosts: Mapping[str, str] = field(default_factory=dict)
    management_user: str = "admin"
    management_password: str = "admin"


def _ms(seconds: float) -> int:
    return max(1, round(seconds * 1000))


def _lock_manager(plan: BrokerPlan) -> str:
    s = plan.settings
    if s.lock_manager == "zookeeper":
        properties = {"connect-string": str(s.zookeeper), "session-ms": str(s.session_ms)}
        name = ZOOKEEPER_LOCK_MANAGER
    else:
        properties = {"locks-folder": str(plan.locks_dir)}
        name = FILE_LOCK_MANAGER
    props = "".join(
        f"<property key={quoteattr(k)} value={quoteattr(v)}/>" for k, v in properties.items()
    )
    return f"<manager><class-name>{name}</class-name><properties>{props}</properties></manager>"


def _ha_policy(plan: BrokerPlan) -> str:
    s = plan.settings
    retry = _ms(plan.timings.link_maintenance_interval_s)
    common = f"<group-name>{escape(plan.group)}</group-name>"
    if s.quorum:
        votes = (
            f"<vote-on-replication-failure>{str(s.vote_on_replication_failure).lower()}"
            f"</vote-on-replication-failure><quorum-vote-wait>{s.quorum_vote_wait_s}"
            f"</quorum-vote-wait><vote-retries>{s.vote_retries}</vote-retries>"
            f"<vote-retry-wait>{s.vote_retry_wait_ms}</vote-retry-wait>"
        )
        if plan.primary:
            role = f"<primary>{common}<check-for-active-server>true</check-for-active-server>"
            role += f"{votes}</primary>"
        else:
            role = f"<backup>{common}<allow-failback>{str(s.failback).lower()}</allow-failback>"
            role += f"<retry-replication-wait>{retry}</retry-replication-wait>{votes}</backup>"
        return f"<ha-policy><replication>{role}</replication></ha-policy>"
    manager = _lock_manager(plan)
    if plan.primary:
        role = f"<primary>{manager}{common}</primary>"
    else:
        failback = f"<allow-failback>{str(s.failback).lower()}</allow-failback>"
        role = f"<backup>{manager}{common}{failback}"
        role += f"<retry-replication-wait>{retry}</retry-replication-wait></backup>"
    return f"<ha-policy><replication>{role}</replication></ha-policy>"


def _cluster_connection(plan: BrokerPlan) -> str:
    """The static cluster connection to the broker's peers; none for a broker alone (an
    empty list of static connectors is an invalid broker.xml, and Artemis never starts)."""
    if not plan.peers:
        return ""
    beat = _ms(plan.timings.link_heartbeat_interval_s)
    retry = _ms(plan.timings.link_maintenance_interval_s)
    statics = "".join(f"<connector-ref>peer-{escape(p)}</connector-ref>" for p in plan.peers)
    return (
        '<cluster-connections><cluster-connection name="lab">'
        "<connector-ref>self</connector-ref>"
        f"<check-period>{beat}</check-period><connection-ttl>{2 * beat}</connection-ttl>"
        f"<retry-interval>{retry}</retry-interval><reconnect-attempts>-1</reconnect-attempts>"
        "<message-load-balancing>OFF</message-load-balancing><max-hops>1</max-hops>"
        f"<static-connectors>{statics}</static-connectors>"
        "</cluster-connection></cluster-connections>"
    )


_PERMISSIONS = (
    "createNonDurableQueue",
    "deleteNonDurableQueue",
    "createDurableQueue",
    "deleteDurableQueue",
    "createAddress",
    "deleteAddress",
    "consume",
    "browse",
    "send",
    "manage",
)


def broker_xml(plan: BrokerPlan) -> str:
    data = plan.data_dir
    connectors = f'<connector name="self">tcp://{escape(plan.advertised)}</connector>' + "".join(
        f'<connector name="peer-{escape(p)}">tcp://{escape(a)}</connector>'
        for p, a in plan.peers.items()
    )
    host = plan.bind_host
    acceptors = (
        f'<acceptor name="cluster">tcp://{host}:{plan.cluster_port}?protocols=CORE</acceptor>'
        f'<acceptor name="amqp">tcp://{host}:{plan.amqp_port}?protocols=AMQP;'
        "amqpCredits=1000;amqpLowCredits=300</acceptor>"
    )
    permissions = "".join(f'<permission type="{p}" roles="{ROLE}"/>' for p in _PERMISSIONS)
    return (
        "<?xml version='1.0'?>\n"
        '<configuration xmlns="urn:activemq">\n<core xmlns="urn:activemq:core">\n'
        f"<name>{escape(plan.name)}</name>\n"
        "<persistence-enabled>true</persistence-enabled><journal-type>NIO</journal-type>\n"
        f"<paging-directory>{data}/paging</paging-directory>"
        f"<bindings-directory>{data}/bindings</bindings-directory>"
        f"<journal-directory>{data}/journal</journal-directory>"
        f"<large-messages-directory>{data}/large-messages</large-messages-directory>"
        f"<node-manager-lock-directory>{data}</node-manager-lock-directory>\n"
        f"<journal-file-size>{JOURNAL_FILE_SIZE}</journal-file-size>"
        "<journal-min-files>2</journal-min-files><journal-pool-files>10</journal-pool-files>\n"
        "<security-enabled>true</security-enabled>\n"
        f"<connectors>{connectors}</connectors>\n<acceptors>{acceptors}</acceptors>\n"
        f"<cluster-user>{CLUSTER_USER}</cluster-user>"
        f"<cluster-password>{escape(plan.cluster_password)}</cluster-password>\n"
        f"{_cluster_connection(plan)}\n{_ha_policy(plan)}\n"
        f'<security-settings><security-setting match="#">{permissions}'
        "</security-setting></security-settings>\n"
        '<address-settings><address-setting match="#">'
        "<auto-create-queues>true</auto-create-queues>"
        "<auto-create-addresses>true</auto-create-addresses>"
        "<default-address-routing-type>ANYCAST</default-address-routing-type>"
        "<default-queue-routing-type>ANYCAST</default-queue-routing-type>"
        "<redelivery-delay>0</redelivery-delay>"
        "</address-setting></address-settings>\n"
        "</core>\n</configuration>\n"
    )


def bootstrap_xml(plan: BrokerPlan, web: bool = True) -> str:
    """The broker and, unless `web` is False (a voter the lab never asks), its web server."""
    server = f'<server configuration="file:{plan.etc_dir}/broker.xml"/>'
    console = (
        f'<web path="web"><binding name="lab" uri="http://{plan.bind_host}:{plan.http_port}">'
        '<app name="console" url="console" war="console.war"/></binding></web>'
        if web
        else ""
    )
    return (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        '<broker xmlns="http://activemq.apache.org/schema">'
        f'<jaas-security domain="activemq"/>{server}{console}</broker>\n'
    )


LOGIN_CONFIG = """activemq {
  org.apache.activemq.artemis.spi.core.security.jaas.PropertiesLoginModule sufficient
    reload=false
    org.apache.activemq.jaas.properties.user="artemis-users.properties"
    org.apache.activemq.jaas.properties.role="artemis-roles.properties";
  org.apache.activemq.artemis.spi.core.security.jaas.GuestLoginModule sufficient
    org.apache.activemq.jaas.guest.user="guest"
    org.apache.activemq.jaas.guest.role="amq";
};
"""

MANAGEMENT_XML = """<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<management-context xmlns="http://activemq.apache.org/schema"><authorisation>
<allowlist><entry domain="hawtio"/></allowlist>
<default-access><access method="list*" roles="amq"/><access method="get*" roles="amq"/>
<access method="is*" roles="amq"/><access method="*" roles="amq"/></default-access>
<role-access><match domain="org.apache.activemq.artemis"><access method="*" roles="amq"/>
</match></role-access></authorisation></management-context>
"""

JOLOKIA_ACCESS = """<?xml version="1.0" encoding="utf-8"?>
<restrict><cors><allow-origin>*://127.0.0.1*</allow-origin></cors></restrict>
"""


def log4j2_properties(node: str) -> str:
    """Console only (the lab keeps it as the node's broker.log); no audit log."""
    return "\n".join(
        (
            "rootLogger.level = INFO",
            "rootLogger.appenderRef.console.ref = console",
            "logger.audit.name = org.apache.activemq.audit",
            "logger.audit.level = OFF",
            "logger.jetty.name = org.eclipse.jetty",
            "logger.jetty.level = WARN",
            "logger.hawtio.name = io.hawt",
            "logger.hawtio.level = WARN",
            "logger.curator.name = org.apache.curator",
            "logger.curator.level = WARN",
            "logger.zookeeper.name = org.apache.zookeeper",
            "logger.zookeeper.level = ERROR",
            "appender.console.type = Console",
            "appender.console.name = console",
            "appender.console.layout.type = PatternLayout",
            "appender.console.layout.pattern = "
            f"%d{{yyyy-MM-dd'T'HH:mm:ss.SSS}} %-5level [{node}] [%logger] %msg%n",
            "",
        )
    )


def hosts_file(hosts: Mapping[str, str]) -> str:
    """`<address> <name>` lines, for the JVM's own resolver (jdk.net.hosts.file)."""
    return "".join(f"{address} {name}\n" for name, address in sorted(hosts.items()))


def etc_files(plan: BrokerPlan, web: bool = True) -> dict[str, str]:
    """Every file of the broker's etc folder, by name."""
    files = {
        "broker.xml": broker_xml(plan),
        "bootstrap.xml": bootstrap_xml(plan, web),
        "login.config": LOGIN_CONFIG,
        "artemis-users.properties": f"{plan.management_user} = {plan.management_password}\n",
        "artemis-roles.properties": f"{ROLE} = {plan.management_user}\n",
        "management.xml": MANAGEMENT_XML,
        "jolokia-access.xml": JOLOKIA_ACCESS,
        "log4j2.properties": log4j2_properties(plan.name),
    }
    if plan.hosts:
        files["hosts"] = hosts_file(plan.hosts)
    return files
