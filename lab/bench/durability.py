"""durability: the seeds' performance table (P1) for broker_ref.

Acknowledged messages per second for 1/1 … 64/64 producers/consumers, as the seeds' table
has them (unlimited rate, 100-byte durable messages, one in flight per producer, through
Toxiproxy), on a single node and on a group of two under the seeds' durability triplets,
with and without coalescing-sync; each as a percentage of the single node with the same
clients. Each cell is measured TRIALS times (a fresh load process and queue each time) and
printed with its spread. The load is one process (`clients.bench_load`: every client a
connection of one event loop, counted, not recorded), so the broker, not the clients, is
what the figures measure where it can be; a second table says which side was saturated
in each cell (CPU of the busiest node and of the load, `p1_table.saturated`). Then the
seeds' ranges, checked per client count. The last line is the headline: the default HA
settings (NO_SYNC,NO_SYNC,SIMPLE_MAJORITY, coalescing-sync) as a percentage of the single
node, averaged over the client counts, and how many cells fall within the seeds' ranges.

In active-passive mode (`--mode active-passive`) the table's layout holds a primary alone,
then a primary with one and with two backups (ha-replicate all: the primary acknowledges
a message once every ready backup holds it), each as a percentage of the primary alone.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from lab.backends.catalog import make_cluster
from lab.bench._base import Benchmark, Say
from lab.bench.load import measure_cell
from lab.bench.p1_table import Trials, range_lines, saturation_lines, share_lines
from lab.ground.cluster_settings import ACTIVE_PASSIVE, SELF_ACTIVATED, ActivePassiveSettings
from lab.ground.spec import Durability, GroupSettings, Topology
from lab.targets.catalog import make_target

__all__ = ["BENCHMARK", "CONFIGURATIONS", "Configuration"]

CLIENTS = (1, 2, 4, 8, 16, 32, 64)
TRIALS = 3
# One message in flight per producer: each client commits before its next send, so the
# concurrency is the client count, the shape of the seeds' table (coalescing-sync batches
# the syncs of concurrent commits). A deep window would make every cell one of many
# commits in flight, and SYNC,SYNC,ALL's acknowledgements arrive seconds late.
WINDOW = 1
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


Rows = dict[str, dict[int, Trials]]


def _row(
    config: Configuration, root: Path, say: Say, target: str = "broker_ref"
) -> dict[int, Trials]:
    """Every client count's trials on one cluster of `config` (a fresh queue each trial)."""
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
    row: dict[int, Trials] = {}
    try:
        cluster.start()
        for clients in CLIENTS:
            cells = tuple(
                measure_cell(
                    cluster.client_urls(),
                    cluster.pids(),
                    clients,
                    f"q{clients}-t{trial}",
                    work_dir,
                    warmup_s=WARMUP_S,
                    measure_s=MEASURE_S,
                    window=WINDOW,
                )
                for trial in range(1, TRIALS + 1)
            )
            row[clients] = Trials(cells)
            rates = ", ".join(f"{cell.rate:,.0f}" for cell in cells)
            say(f"  {target} {config.label}: {clients}/{clients} -> {rates} msg/s")
    finally:
        cluster.stop()
    return row


def _print(rows: Rows, baseline: str, say: Say, indent: str = "") -> None:
    for line in share_lines(rows, baseline, CLIENTS) + saturation_lines(rows, CLIENTS):
        say(f"{indent}{line}")


def _share(row: dict[int, Trials], baseline: dict[int, Trials]) -> float:
    return sum(row[c].share(baseline[c])[0] for c in CLIENTS) / len(CLIENTS)


def _clients_text() -> str:
    return f"{CLIENTS[0]}/{CLIENTS[0]} … {CLIENTS[-1]}/{CLIENTS[-1]} clients, {TRIALS} trials each"


def run(say: Say) -> str:
    rows: Rows = {}
    with tempfile.TemporaryDirectory(prefix="lab-bench-durability-") as tmp:
        for config in CONFIGURATIONS:
            say(f"{config.label} ({config.nodes} node{'s' if config.nodes > 1 else ''})")
            rows[config.label] = _row(config, Path(tmp), say)
    baseline = CONFIGURATIONS[0].label
    _print(rows, baseline, say)
    ranges, tally = range_lines(rows, baseline, CLIENTS)
    for line in ranges:
        say(line)
    share = _share(rows[HEADLINE.label], rows[baseline])
    within = "; ".join(f"{label} {k}/{n}" for label, (k, n) in tally.items())
    return (
        f"durability: default HA settings ({HEADLINE.durability.triplet}, coalescing-sync, "
        f"2 nodes) = {share:.0f}% of a single node's throughput (mean over {_clients_text()}; "
        f"target >= {TARGET_PERCENT:.0f}%); within the seeds' ranges: {within}"
    )


def run_against(say: Say, target: str) -> str:
    """The configurations every target offers, for broker_ref and `target` in one run."""
    tables: dict[str, Rows] = {}
    with tempfile.TemporaryDirectory(prefix="lab-bench-durability-") as tmp:
        for name in ("broker_ref", target):
            rows: Rows = {}
            for config in COMPARED:
                say(f"{name}: {config.label} ({config.nodes} node(s))")
                rows[config.label] = _row(config, Path(tmp), say, name)
            tables[name] = rows
    baseline = COMPARED[0].label
    for name, rows in tables.items():
        say(f"{name} (single node in msg/s, groups of two in % of it):")
        _print(rows, baseline, say, "  ")
    shares = {name: _share(rows[HEADLINE.label], rows[baseline]) for name, rows in tables.items()}
    mean_single = {
        name: sum(t.rate for t in rows[baseline].values()) / len(CLIENTS)
        for name, rows in tables.items()
    }
    return (
        f"durability: default HA settings ({HEADLINE.durability.triplet}, coalescing-sync, "
        f"2 nodes) = {shares[target]:.0f}% of a single node for {target} vs "
        f"{shares['broker_ref']:.0f}% for broker_ref; single node {mean_single[target]:,.0f} "
        f"vs {mean_single['broker_ref']:,.0f} msg/s (means over {_clients_text()}, "
        "local processes)"
    )


def run_mode(say: Say, mode: str) -> str:
    """The table for an active-passive cluster: 1, 2 and 3 brokers, in % of the first."""
    if mode != ACTIVE_PASSIVE:
        return run(say)
    rows: Rows = {}
    with tempfile.TemporaryDirectory(prefix="lab-bench-durability-") as tmp:
        for config in ACTIVE_PASSIVE_CONFIGURATIONS:
            say(f"active-passive: {config.label} ({config.nodes} broker(s))")
            rows[config.label] = _row(config, Path(tmp), say)
    baseline = ACTIVE_PASSIVE_CONFIGURATIONS[0].label
    _print(rows, baseline, say)
    one, two = (_share(rows[c.label], rows[baseline]) for c in ACTIVE_PASSIVE_CONFIGURATIONS[1:])
    mean = sum(t.rate for t in rows[baseline].values()) / len(CLIENTS)
    return (
        f"durability: active-passive primary + 1 backup = {one:.0f}%, + 2 backups = "
        f"{two:.0f}% of the primary alone ({mean:,.0f} msg/s; means over {_clients_text()}, "
        "ha-replicate all, local processes)"
    )


def run_mode_against(say: Say, mode: str, target: str) -> str:
    """The active-passive table for broker_ref (its manager promotes) and `target` (its
    brokers activate themselves), in one run."""
    if mode != ACTIVE_PASSIVE:
        return run_against(say, target)
    own = {
        "broker_ref": ACTIVE_PASSIVE_CONFIGURATIONS,
        target: tuple(
            replace(c, group=_self_activated(c.group)) for c in ACTIVE_PASSIVE_CONFIGURATIONS
        ),
    }
    tables: dict[str, Rows] = {}
    with tempfile.TemporaryDirectory(prefix="lab-bench-durability-") as tmp:
        for name, configurations in own.items():
            rows: Rows = {}
            for config in configurations:
                say(f"{name} active-passive: {config.label} ({config.nodes} broker(s))")
                rows[config.label] = _row(config, Path(tmp), say, name)
            tables[name] = rows
    baseline = ACTIVE_PASSIVE_CONFIGURATIONS[0].label
    shares: dict[str, tuple[float, float, float]] = {}
    for name, rows in tables.items():
        say(f"{name} (the primary alone in msg/s, with backups in % of it):")
        _print(rows, baseline, say, "  ")
        one, two = (
            _share(rows[c.label], rows[baseline]) for c in ACTIVE_PASSIVE_CONFIGURATIONS[1:]
        )
        shares[name] = (one, two, sum(t.rate for t in rows[baseline].values()) / len(CLIENTS))
    ours, theirs = shares["broker_ref"], shares[target]
    return (
        f"durability: active-passive primary + 1 backup = {theirs[0]:.0f}% of the primary alone "
        f"for {target} vs {ours[0]:.0f}% for broker_ref (+ 2 backups {theirs[1]:.0f}% vs "
        f"{ours[1]:.0f}%); the primary alone {theirs[2]:,.0f} vs {ours[2]:,.0f} msg/s (means "
        f"over {_clients_text()}, local processes)"
    )


def _self_activated(group: GroupSettings | None) -> GroupSettings:
    assert group is not None
    settings = group.active_passive.with_changes(activation=SELF_ACTIVATED)
    return replace(group, active_passive=settings)


BENCHMARK = Benchmark(
    name="durability",
    description="the seeds' table P1: msg/s on 1 node vs 2-node groups under each durability "
    "triplet, as % of the single node",
    run=run,
    run_against=run_against,
    run_mode=run_mode,
    run_mode_against=run_mode_against,
)
