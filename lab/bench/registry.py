"""Every benchmark by name."""

from __future__ import annotations

from collections.abc import Mapping

from lab.bench import (
    campaign,
    check_command,
    checker,
    cli_startup,
    coverage,
    detection,
    durability,
    failover,
    interrupt,
    node_memory,
    rediscover,
    report,
    shrink,
    soak,
    startup,
    throughput,
)
from lab.bench._base import Benchmark
from lab.ground.errors import UsageError

__all__ = ["BENCHMARKS", "benchmark_named"]

BENCHMARKS: Mapping[str, Benchmark] = {
    b.name: b
    for b in (
        checker.BENCHMARK,
        check_command.BENCHMARK,
        startup.BENCHMARK,
        cli_startup.BENCHMARK,
        throughput.BENCHMARK,
        failover.BENCHMARK,
        durability.BENCHMARK,
        report.BENCHMARK,
        campaign.BENCHMARK,
        shrink.BENCHMARK,
        coverage.BENCHMARK,
        interrupt.BENCHMARK,
        soak.BENCHMARK,
        node_memory.BENCHMARK,
        detection.BENCHMARK,
        rediscover.BENCHMARK,
    )
}


def benchmark_named(name: str) -> Benchmark:
    try:
        return BENCHMARKS[name]
    except KeyError:
        known = ", ".join(sorted(BENCHMARKS))
        raise UsageError(f"unknown benchmark {name!r} (known: {known}; see `lab bench`)") from None
