"""Shared by the client tests: the workers' base command line and an op writer on a stream."""

from __future__ import annotations

import io

from clients.op_writer import OpWriter

BASE = ["--process", "p1", "--urls", "amqp://127.0.0.1:1,amqp://127.0.0.1:2"]
BASE += ["--nodes", "n1,n2", "--queue", "lab", "--run-start-ns", "5"]


def writer_on(stream: io.StringIO, process: str = "p1", now: int = 1_000) -> OpWriter:
    return OpWriter(process, run_start_ns=400, stream=stream, clock=lambda: now)
