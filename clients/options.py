"""The command line every worker takes: the failover list (`--urls`, `--nodes`), the queue,
the run's clock and the AMQP heartbeat."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

__all__ = [
    "Address",
    "ConnectionOptions",
    "add_connection_arguments",
    "connection_options",
    "parse_positive",
]


@dataclass(frozen=True)
class Address:
    """One entry of the failover list: a URL and the node behind it."""

    url: str
    node: str


@dataclass(frozen=True)
class ConnectionOptions:
    """The options every worker takes."""

    process: str
    addresses: tuple[Address, ...]
    queue: str
    run_start_ns: int
    heartbeat_s: float
    # Record the node the broker names in its open frame (its container id), not the
    # address's: behind a virtual address the broker is whichever one it points at.
    node_from_broker: bool = False


def _names(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def add_connection_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of `ConnectionOptions` to `parser`."""
    parser.add_argument("--process", required=True, help="this worker's name, e.g. p1 or c1")
    parser.add_argument("--urls", required=True, help="comma-separated AMQP URLs, tried in turn")
    parser.add_argument("--nodes", required=True, help="the node behind each URL, same order")
    parser.add_argument("--queue", required=True, help="the queue's address")
    parser.add_argument(
        "--run-start-ns", type=int, required=True, help="time.monotonic_ns() when the run began"
    )
    parser.add_argument(
        "--heartbeat", type=float, default=2.0, help="AMQP idle timeout in seconds (0 = none)"
    )
    parser.add_argument(
        "--node-from-broker",
        action="store_true",
        help="record the node the broker names itself (its AMQP container id), as behind a "
        "virtual address",
    )


def connection_options(
    args: argparse.Namespace, parser: argparse.ArgumentParser
) -> ConnectionOptions:
    """The parsed `ConnectionOptions`; a bad value exits through `parser.error`."""
    urls = _names(args.urls)
    nodes = _names(args.nodes)
    if not urls:
        parser.error("--urls names no URL")
    if len(urls) != len(nodes):
        parser.error(f"--urls has {len(urls)} entries but --nodes has {len(nodes)}")
    if not args.process:
        parser.error("--process is empty")
    if args.heartbeat < 0:
        parser.error("--heartbeat cannot be negative")
    return ConnectionOptions(
        process=args.process,
        addresses=tuple(Address(url, node) for url, node in zip(urls, nodes, strict=True)),
        queue=args.queue,
        run_start_ns=args.run_start_ns,
        heartbeat_s=args.heartbeat,
        node_from_broker=args.node_from_broker,
    )


def parse_positive(parser: argparse.ArgumentParser, name: str, value: float) -> None:
    """Exit through `parser.error` unless `value` > 0."""
    if value <= 0:
        parser.error(f"{name} must be positive")
