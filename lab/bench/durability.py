"""durability: the seeds' performance table (P1) for broker_ref.

Acknowledged messages per second for 1/1, 2/2, 4/4 and 8/8 producers/consumers
(unlimited rate, 100-byte messages, through Toxiproxy) on a single node and on a
group of two under the seeds' durability triplets, with and without coalescing-sync;
each as a percentage of the single node with the same clients. The last line is the
headline: the default HA settings (NO_SYNC,NO_SYNC,SIMPLE_MAJORITY, coalescing-sync)
as a percentage of the single node, averaged over the client counts.

In active-passive mode (`--mode active-passive`) the table's layout holds a primary alone,
then a primary with one and with two backups (ha-replicate all: the primary acknowledges
a message once every ready backup holds it), each as a percentage of the primary alone.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from lab.backends.catalog import make_cluster
from lab.bench._base import Benchmark, Say
from lab.bench.load import acknowledged_per_second
from lab.ground.cluster_settings import ACTIVE_PASSIVE, ActivePassiveSettings
from lab.ground.spec import Durability, GroupSettings, Topology, Workload
from lab.targets.catalog import make_target

__all__ = ["BENCHMARK", "CONFIGURATIONS", "Configuration"]

CLIENTS = (1, 2, 4, 8)
WARMUP_S = 1.0
MEASURE_S = 3.0
TARGET_PERCENT = 50.0


@dataclass(frozen=True)
class Configuration:
    label: str
    nodes: int
    durability: Durability
    group: GroupSettings | None = None


CONFIGURATIONS = (
    Configuration("single node", 1, Durability()),
    Configuration("SYNC,SYNC,ALL", 2, Durability("SYNC", "SYNC", "ALL", False)),
    Configuration(
        "WRITE_NO_SYNC,WRITE_NO_SYNC,ALL",
        2,
        Durability("WRITE_NO_SYNC", "WRITE_NO_SYNC", "ALL", False),
    ),
    Configuration(
        "WRITE_NO_SYNC,WRITE_NO_SYNC,ALL +cs",
        2,
        Durability("WRITE_NO_SYNC", "WRITE_NO_SYNC", "ALL", True),
    ),
    Configuration(
        "WRITE_NO_SYNC,NO_SYNC,ALL +cs", 2, Durability("WRITE_NO_SYNC", "NO_SYNC", "ALL", True)
    ),
    Configuration("NO_SYNC,NO_SYNC,ALL +cs", 2, Durability("NO_SYNC", "NO_SYNC", "ALL", True)),
    Configuration("NO_SYNC,NO_SYNC,SIMPLE_MAJORITY +cs (default)", 2, Durability()),
)
HEADLINE = CONFIGURATIONS[-1]
_ACTIVE_PASSIVE = GroupSettings(
    mode=ACTIVE_PASSIVE,
    active_passive=ActivePassiveSettings(ha_replicate="all", status_poll_interval_s=0.5),
)
ACTIVE_PASSIVE_CONFIGURATIONS = (
    Configuration("primary alone", 1, Durability(), _ACTIVE_PASSIVE),
    Configuration("primary + 1 backup", 2, Durability(), _ACTIVE_PASSIVE),
    Configuration("primary + 2 backups", 3, Durability(), _ACTIVE_PASSIVE),
)
# What every target offers: Broker-J fixes the replica acknowledgement policy at
# SIMPLE_MAJORITY (in a group of two, both nodes), so the comparison uses that policy.
COMPARED = (
    CONFIGURATIONS[0],
    Configuration(
        "SYNC,SYNC,SIMPLE_MAJORITY", 2, Durability("SYNC", "SYNC", "SIMPLE_MAJORITY", False)
    ),
    Configuration(
        "WRITE_NO_SYNC,WRITE_NO_SYNC,SIMPLE_MAJORITY +cs",
        2,
        Durability("WRITE_NO_SYNC", "WRITE_NO_SYNC", "SIMPLE_MAJORITY", True),
    ),
    HEADLINE,
)


def _measure(urls: list[str], nodes: tuple[str, ...], clients: int, work_dir: Path) -> float:
    workload = Workload(
        producers=clients, consumers=clients, rate=0.0, size=100, window=100, queue=f"q{clients}"
    )
    return acknowledged_per_second(
        workload, urls, nodes, work_dir, warmup_s=WARMUP_S, measure_s=MEASURE_S
    )


def _row(
    config: Configuration, root: Path, say: Say, target: str = "broker_ref"
) -> dict[int, float]:
    work_dir = root / target / config.label.replace(",", "-").replace(" ", "_")
    work_dir.mkdir(parents=True)
    cluster = make_cluster(
        "process",
        make_target(target),
        Topology(nodes=config.nodes),
        config.durability,
        work_dir,
        group=config.group,
    )
    rates: dict[int, float] = {}
    try:
        cluster.start()
        for clients in CLIENTS:
            rates[clients] = _measure(cluster.client_urls(), cluster.node_names, clients, work_dir)
            say(f"  {target} {config.label}: {clients}/{clients} -> {rates[clients]:,.0f} msg/s")
    finally:
        cluster.stop()
    return rates


def table(rows: dict[str, dict[int, float]], baseline: dict[int, float]) -> list[str]:
    """The table as lines: msg/s of the single node, then each configuration in % of it."""
    width = max(len(label) for label in rows)
    head = f"{'clients':<{width}}  " + "  ".join(f"{f'{c}/{c}':>9}" for c in CLIENTS)
    lines = [head]
    for label, rates in rows.items():
        if rates is baseline:
            cells = [f"{rates[c]:>7,.0f}/s" for c in CLIENTS]
        else:
            cells = [f"{100 * rates[c] / baseline[c]:>8.1f}%" for c in CLIENTS]
        lines.append(f"{label:<{width}}  " + "  ".join(cells))
    return lines


def run(say: Say) -> str:
    rows: dict[str, dict[int, float]] = {}
    with tempfile.TemporaryDirectory(prefix="lab-bench-durability-") as tmp:
        for config in CONFIGURATIONS:
            say(f"{config.label} ({config.nodes} node{'s' if config.nodes > 1 else ''})")
            rows[config.label] = _row(config, Path(tmp), say)
    baseline = rows[CONFIGURATIONS[0].label]
    for line in table(rows, baseline):
        say(line)
    headline = rows[HEADLINE.label]
    share = sum(100 * headline[c] / baseline[c] for c in CLIENTS) / len(CLIENTS)
    return (
        f"durability: default HA settings ({HEADLINE.durability.triplet}, coalescing-sync, "
        f"2 nodes) = {share:.0f}% of a single node's throughput (mean over "
        f"{', '.join(f'{c}/{c}' for c in CLIENTS)} clients; target >= {TARGET_PERCENT:.0f}%)"
    )


def _share(rates: dict[int, float], baseline: dict[int, float]) -> float:
    return sum(100 * rates[c] / baseline[c] for c in CLIENTS) / len(CLIENTS)


def run_against(say: Say, target: str) -> str:
    """The configurations every target offers, for broker_ref and `target` in one run."""
    tables: dict[str, dict[str, dict[int, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="lab-bench-durability-") as tmp:
        for name in ("broker_ref", target):
            rows: dict[str, dict[int, float]] = {}
            for config in COMPARED:
                say(f"{name}: {config.label} ({config.nodes} node(s))")
                rows[config.label] = _row(config, Path(tmp), say, name)
            tables[name] = rows
    for name, rows in tables.items():
        say(f"{name} (single node in msg/s, groups of two in % of it):")
        for line in table(rows, rows[COMPARED[0].label]):
            say(f"  {line}")
    shares = {
        name: _share(rows[HEADLINE.label], rows[COMPARED[0].label]) for name, rows in tables.items()
    }
    single = {name: rows[COMPARED[0].label] for name, rows in tables.items()}
    mean_single = {name: sum(r.values()) / len(r) for name, r in single.items()}
    return (
        f"durability: default HA settings ({HEADLINE.durability.triplet}, coalescing-sync, "
        f"2 nodes) = {shares[target]:.0f}% of a single node for {target} vs "
        f"{shares['broker_ref']:.0f}% for broker_ref; single node {mean_single[target]:,.0f} "
        f"vs {mean_single['broker_ref']:,.0f} msg/s (means over "
        f"{', '.join(f'{c}/{c}' for c in CLIENTS)} clients, local processes)"
    )


def run_mode(say: Say, mode: str) -> str:
    """The table for an active-passive cluster: 1, 2 and 3 brokers, in % of the first."""
    if mode != ACTIVE_PASSIVE:
        return run(say)
    rows: dict[str, dict[int, float]] = {}
    with tempfile.TemporaryDirectory(prefix="lab-bench-durability-") as tmp:
        for config in ACTIVE_PASSIVE_CONFIGURATIONS:
            say(f"active-passive: {config.label} ({config.nodes} broker(s))")
            rows[config.label] = _row(config, Path(tmp), say)
    baseline = rows[ACTIVE_PASSIVE_CONFIGURATIONS[0].label]
    for line in table(rows, baseline):
        say(line)
    one, two = (_share(rows[c.label], baseline) for c in ACTIVE_PASSIVE_CONFIGURATIONS[1:])
    mean = sum(baseline.values()) / len(baseline)
    return (
        f"durability: active-passive primary + 1 backup = {one:.0f}%, + 2 backups = "
        f"{two:.0f}% of the primary alone ({mean:,.0f} msg/s; means over "
        f"{', '.join(f'{c}/{c}' for c in CLIENTS)} clients, ha-replicate all, local processes)"
    )


BENCHMARK = Benchmark(
    name="durability",
    description="the seeds' table P1: msg/s on 1 node vs 2-node groups under each durability "
    "triplet, as % of the single node",
    run=run,
    run_against=run_against,
    run_mode=run_mode,
)
