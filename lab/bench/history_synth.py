"""Synthetic histories with a known number of injected faults, for testing the checker.

`synthesize` writes a history.jsonl (docs/run-folder.md, history.jsonl) and returns a `SynthTruth`:
the ids the checker must find in each category. Messages go out in small blocks: every
producer invokes its sends, the broker answers them, and the consumers receive the previous
block. Each message follows one script:

    normal      send invoke, send ok, receive ok
    retried     send invoke, send info|fail, send invoke, send ok, receive ok
    lost        send invoke, send ok                            (never received)
    duplicate   send invoke, send ok, receive ok, receive ok
    resurrect   send invoke, send fail, receive ok
    failed      send invoke, send fail
    unknown     send invoke, then send info or no completion, then maybe a receive ok

plus `unexpected` receives of ids nobody sent, and one drain per consumer at the end.
All randomness comes from one `random.Random(seed)`.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal

__all__ = ["SynthTruth", "synthesize"]

_NORMAL, _RETRIED, _LOST, _DUPLICATE, _RESURRECT, _FAILED = range(6)
_INFO, _INFO_RECEIVED, _OPEN, _OPEN_RECEIVED = range(6, 10)
_UNKNOWN_KINDS = (_INFO, _INFO_RECEIVED, _OPEN, _OPEN_RECEIVED)
_LINES = (3, 5, 2, 4, 3, 2, 2, 3, 1, 2)
_FIRST_COMPLETION: tuple[str | None, ...] = (
    "ok",
    "info",
    "ok",
    "ok",
    "fail",
    "fail",
    "info",
    "info",
    None,
    None,
)
_RECEIVED = frozenset({_NORMAL, _RETRIED, _DUPLICATE, _RESURRECT, _INFO_RECEIVED, _OPEN_RECEIVED})
_BLOCK = 16
_CHUNK = 1 << 16
_NANOS = [f"{3 * jitter:03d}" for jitter in range(256)]


@dataclass(frozen=True)
class SynthTruth:
    """What the checker must report for a synthesized history; id tuples are sorted."""

    operations: int
    attempted: int
    acknowledged: int
    received: int
    failed: tuple[str, ...]
    indeterminate: tuple[str, ...]
    lost: tuple[str, ...]
    unexpected: tuple[str, ...]
    resurrected: tuple[str, ...]
    recovered: tuple[str, ...]
    duplicated: tuple[str, ...]
    duplicate_deliveries: int
    valid: bool | Literal["unknown"]


@dataclass(frozen=True)
class _Plan:
    kinds: bytearray
    producers: int
    consumers: int
    unexpected: dict[int, list[str]]
    failed_drain: int | None


def synthesize(
    path: Path,
    *,
    operations: int,
    producers: int = 4,
    consumers: int = 2,
    seed: int,
    lose: int = 0,
    duplicate: int = 0,
    resurrect: int = 0,
    unknown: int = 0,
    fail: int = 0,
    unexpected: int = 0,
    drain_ok: bool = True,
) -> SynthTruth:
    """Write about `operations` history lines to `path` (never more) and return the truth.

    Raises `ValueError` if the faults asked for do not fit in `operations` lines.
    """
    if producers < 1 or consumers < 1:
        raise ValueError("synthesize needs at least one producer and one consumer")
    counts = {"lose": lose, "duplicate": duplicate, "resurrect": resurrect}
    counts |= {"unknown": unknown, "fail": fail, "unexpected": unexpected}
    negative = [name for name, count in counts.items() if count < 0]
    if negative:
        raise ValueError(f"synthesize: negative count for {', '.join(negative)}")
    rng = random.Random(seed)
    plan = _plan(
        rng,
        operations=operations,
        producers=producers,
        consumers=consumers,
        faults=[_LOST] * lose
        + [_DUPLICATE] * duplicate
        + [_RESURRECT] * resurrect
        + [_FAILED] * fail
        + [rng.choice(_UNKNOWN_KINDS) for _ in range(unknown)],
        unexpected=unexpected,
        drain_ok=drain_ok,
    )
    written = _write(path, _operations(plan), rng)
    return _truth(plan, written)


def _plan(
    rng: random.Random,
    *,
    operations: int,
    producers: int,
    consumers: int,
    faults: list[int],
    unexpected: int,
    drain_ok: bool,
) -> _Plan:
    fixed = sum(_LINES[kind] for kind in faults) + unexpected + 2 * consumers
    budget = operations - fixed
    if budget < 0:
        raise ValueError(f"synthesize: the faults asked for need {fixed} lines, not {operations}")
    normal, retried = _fill(budget)
    total = normal + retried + len(faults)
    kinds = bytearray(total)
    special = [_RETRIED] * retried + faults
    for position, kind in zip(rng.sample(range(total), len(special)), special, strict=True):
        kinds[position] = kind
    blocks = total // _BLOCK + 3
    strays: dict[int, list[str]] = {}
    for number in range(unexpected):
        strays.setdefault(rng.randrange(blocks), []).append(f"u-{number}")
    return _Plan(
        kinds=kinds,
        producers=producers,
        consumers=consumers,
        unexpected=strays,
        failed_drain=None if drain_ok else rng.randrange(consumers),
    )


def _fill(budget: int) -> tuple[int, int]:
    """As many lines as fit in `budget` from normal (3 lines) and retried (5 lines) messages."""
    while True:
        retried = (0, 2, 1)[budget % 3]
        if 5 * retried <= budget:
            return (budget - 5 * retried) // 3, retried
        budget -= 1


def _message_id(plan: _Plan, message: int) -> str:
    return f"p{message % plan.producers}-{message // plan.producers}"


def _operations(plan: _Plan) -> Iterator[list[str]]:
    """Every history line without its index and time, in file order, a block at a time."""
    kinds = plan.kinds
    producers = [_Process.named(f"p{n}", f"n{n % 3 + 1}") for n in range(plan.producers)]
    consumers = [_Process.named(f"c{n}", f"n{n % 3 + 1}") for n in range(plan.consumers)]
    total = len(kinds)
    previous: list[str] = []
    again: list[str] = []
    second: list[str] = []
    delivery = 0
    for block in range(total // _BLOCK + 3):
        members = range(block * _BLOCK, min((block + 1) * _BLOCK, total))
        values = [f'"{_message_id(plan, message)}"' for message in members]
        senders = [producers[message % plan.producers] for message in members]
        lines = [
            sender.heads["invoke", "send"] + value + sender.tail
            for value, sender in zip(values, senders, strict=True)
        ]
        received: list[str] = []
        repeated: list[str] = []
        for message, value, sender in zip(members, values, senders, strict=True):
            kind = kinds[message]
            completion = _FIRST_COMPLETION[kind]
            if kind == _RETRIED and message % 2:
                completion = "fail"
            if completion is not None:
                lines.append(sender.line(completion, "send", value))
            if kind == _RETRIED:
                lines.append(sender.line("invoke", "send", value))
                lines.append(sender.line("ok", "send", value))
            if kind in _RECEIVED:
                received.append(value)
            if kind == _DUPLICATE:
                repeated.append(value)
        strays = [f'"{stray}"' for stray in plan.unexpected.get(block, [])]
        for value in previous + second + strays:
            lines.append(consumers[delivery % plan.consumers].line("ok", "receive", value))
            delivery += 1
        previous, second, again = received, again, repeated
        yield lines
    for number, consumer in enumerate(consumers):
        end = "info" if number == plan.failed_drain else "ok"
        yield [consumer.line("invoke", "drain", "null"), consumer.line(end, "drain", "null")]


@dataclass(frozen=True)
class _Process:
    """A client worker's lines, pre-rendered up to the value: `heads[(type, f)] + value + tail`."""

    heads: dict[tuple[str, str], str]
    tail: str

    @classmethod
    def named(cls, name: str, node: str) -> _Process:
        heads = {
            (kind, function): f'"process":"{name}","type":"{kind}","f":"{function}","value":'
            for kind in ("invoke", "ok", "fail", "info")
            for function in ("send", "receive", "drain")
        }
        return cls(heads=heads, tail=f',"node":"{node}"}}\n')

    def line(self, kind: str, function: str, value: str) -> str:
        """A history line after its index and time; `value` is already JSON."""
        return self.heads[kind, function] + value + self.tail


def _write(path: Path, blocks: Iterator[list[str]], rng: random.Random) -> int:
    """Write the lines in big chunks; return how many."""
    index = 0
    chunk: list[str] = []
    with path.open("wb") as stream:
        for block in blocks:
            chunk += block
            if len(chunk) >= _CHUNK:
                index = _write_chunk(stream, chunk, index, rng)
                chunk = []
        return _write_chunk(stream, chunk, index, rng)


def _write_chunk(stream: BinaryIO, chunk: list[str], first: int, rng: random.Random) -> int:
    """Prefix each line with its index and time, then write them all at once.

    Line i happens at (i + 1) microseconds plus a random 0-765 ns, so times strictly
    increase, and the time's decimal digits are those of i + 1 followed by three more.
    """
    end = first + len(chunk)
    stream.write(
        "".join(
            [
                f'{{"index":{index},"time":{micros}{_NANOS[delay]},{line}'
                for index, micros, delay, line in zip(
                    map(str, range(first, end)),
                    map(str, range(first + 1, end + 1)),
                    rng.randbytes(len(chunk)),
                    chunk,
                    strict=True,
                )
            ]
        ).encode("utf-8")
    )
    return end


def _truth(plan: _Plan, written: int) -> SynthTruth:
    by_kind: dict[int, list[str]] = {}
    for message, kind in enumerate(plan.kinds):
        if kind != _NORMAL:
            by_kind.setdefault(kind, []).append(_message_id(plan, message))

    def ids(*kinds: int) -> tuple[str, ...]:
        return tuple(sorted(value for kind in kinds for value in by_kind.get(kind, [])))

    strays = tuple(sorted(stray for group in plan.unexpected.values() for stray in group))
    total = len(plan.kinds)
    not_acknowledged = ids(_RESURRECT, _FAILED, *_UNKNOWN_KINDS)
    never_received = ids(_LOST, _FAILED, _INFO, _OPEN)
    lost = ids(_LOST)
    resurrected = ids(_RESURRECT)
    valid: bool | Literal["unknown"] = True
    if strays or resurrected:
        valid = False
    elif lost:
        valid = "unknown" if plan.failed_drain is not None else False
    return SynthTruth(
        operations=written,
        attempted=total,
        acknowledged=total - len(not_acknowledged),
        received=total - len(never_received) + len(strays),
        failed=ids(_RESURRECT, _FAILED),
        indeterminate=ids(*_UNKNOWN_KINDS),
        lost=lost,
        unexpected=strays,
        resurrected=resurrected,
        recovered=ids(_INFO_RECEIVED, _OPEN_RECEIVED),
        duplicated=ids(_DUPLICATE),
        duplicate_deliveries=len(by_kind.get(_DUPLICATE, [])),
        valid=valid,
    )
