"""The checker's state while it streams a history: a few bits and counters per message.

Each batch of operations is folded into arrays indexed by message code (`message_ids`):

    flags      sent, acknowledged (a send ok), info (a send info), refused (a send fail)
    received   how many `receive ok` named it
    open       send invokes minus send completions by its first sending process
    sender     that process

(A send by another process than the first, which the lab's clients never make, is counted
in a dict by (process, code).) Drains are remembered per process: the type of its last drain
operation. Nothing else is kept, so memory follows the number of distinct messages, not the
number of operations, and `result` sorts the codes into the checker's sets
(docs/run-folder.md) at the end.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lab.judge.check_result import MAX_IDS, CheckResult, IdSet, verdict
from lab.judge.message_ids import MessageIds, Move

__all__ = ["QueueTally"]

_SEND, _RECEIVE, _DRAIN = 0, 1, 2
_INVOKE, _OK, _FAIL, _INFO = 0, 1, 2, 3
_UNKNOWN = 255
_FUNCTION_CODES = {"send": _SEND, "receive": _RECEIVE, "drain": _DRAIN}
_TYPE_CODES = {"invoke": _INVOKE, "ok": _OK, "fail": _FAIL, "info": _INFO}
_SENT, _ACKED, _INFO_SEEN, _REFUSED = 1, 2, 4, 8
_COMPLETION_BIT = {_OK: _ACKED, _INFO: _INFO_SEEN, _FAIL: _REFUSED}
_REQUIRED = ("index", "time", "process", "type", "f")
_PROBLEM = "a field is missing or out of range"


class QueueTally:
    """Folds batches of history operations in; `result` gives the checker's verdict."""

    def __init__(self) -> None:
        self.operations = 0
        self._ids = MessageIds()
        self._flags = np.zeros(0, np.uint8)
        self._received = np.zeros(0, np.uint32)
        self._open = np.zeros(0, np.int32)
        self._sender = np.zeros(0, np.int32)
        self._other_senders: defaultdict[tuple[int, int], int] = defaultdict(int)
        self._processes: dict[str | None, int] = {}
        self._last_drain: dict[int, int] = {}

    def add(self, batch: pa.RecordBatch) -> str | None:
        """Fold in a batch with columns process, type, f, value (index, time if present).

        Returns what breaks the history format in it instead, and then counts nothing.
        """
        if batch.num_rows == 0:
            return None
        names = batch.schema.names
        if any(batch.column(name).null_count for name in _REQUIRED if name in names):
            return _PROBLEM
        function = _small_codes(batch.column("f"), _FUNCTION_CODES)
        kind = _small_codes(batch.column("type"), _TYPE_CODES)
        if (function == _UNKNOWN).any() or (kind == _UNKNOWN).any():
            return _PROBLEM
        send = function == _SEND
        delivery = (function == _RECEIVE) & (kind == _OK)
        need = send | delivery
        values = batch.column("value")
        if pa.types.is_dictionary(values.type):
            values = values.dictionary_decode()
        if values.null_count and (need & np.asarray(values.is_null())).any():
            return _PROBLEM
        codes, moves = self._ids.encode(values, need)
        self._make_room(self._ids.size)
        self._move(moves)
        drain = function == _DRAIN
        process = self._process_codes(batch.column("process"), send | drain)
        self._count_sends(codes[send], kind[send], process[send])
        np.add.at(self._received, codes[delivery], np.uint32(1))
        if drain.any():
            self._note_drains(process[drain], kind[drain])
        self.operations += batch.num_rows
        return None

    def result(self) -> CheckResult:
        """The checker's sets (docs/run-folder.md) from everything added."""
        size = self._ids.size
        flags, counts = self._flags[:size], self._received[:size]
        sent = (flags & _SENT) != 0
        acked = (flags & _ACKED) != 0
        unfinished = self._open[:size] > 0
        for (_process, code), still_open in self._other_senders.items():
            if still_open > 0:
                unfinished[code] = True
        unsettled = sent & ~acked
        indeterminate = unsettled & (((flags & _INFO_SEEN) != 0) | unfinished)
        failed = unsettled & ((flags & _REFUSED) != 0) & ~indeterminate
        received = counts > 0
        lost = acked & ~received
        unexpected = received & ~sent
        resurrected = received & failed
        drained = bool(self._last_drain) and all(k == _OK for k in self._last_drain.values())
        lost_count = int(np.count_nonzero(lost))
        violations = int(np.count_nonzero(unexpected)) + int(np.count_nonzero(resurrected))
        return CheckResult(
            valid=verdict(lost=lost_count, violations=violations, drained=drained),
            attempted=int(np.count_nonzero(sent)),
            acknowledged=int(np.count_nonzero(acked)),
            failed=int(np.count_nonzero(failed)),
            indeterminate=int(np.count_nonzero(indeterminate)),
            received=int(np.count_nonzero(received)),
            lost=self._id_set(lost),
            unexpected=self._id_set(unexpected),
            resurrected=self._id_set(resurrected),
            recovered=self._id_set(received & indeterminate),
            duplicated=self._id_set(counts > 1),
            duplicate_deliveries=int(counts.sum(dtype=np.int64)) - int(np.count_nonzero(received)),
        )

    def _count_sends(self, codes: np.ndarray, kind: np.ndarray, process: np.ndarray) -> None:
        if codes.size == 0:
            return
        flags = self._flags
        flags[codes] |= np.uint8(_SENT)
        for completion, bit in _COMPLETION_BIT.items():
            chosen = codes[kind == completion]
            if chosen.size:
                flags[chosen] |= np.uint8(bit)
        step = np.where(kind == _INVOKE, 1, -1).astype(np.int32)
        who = process + 1
        first = self._sender[codes]
        unset = first == 0
        if unset.any():
            self._sender[codes[unset]] = who[unset]
            first = self._sender[codes]
        mine = first == who
        if mine.all():
            np.add.at(self._open, codes, step)
            return
        np.add.at(self._open, codes[mine], step[mine])
        others = ~mine
        for code, proc, delta in zip(
            codes[others].tolist(), process[others].tolist(), step[others].tolist(), strict=True
        ):
            self._other_senders[proc, code] += delta

    def _note_drains(self, process: np.ndarray, kind: np.ndarray) -> None:
        backwards = process[::-1]
        names, last = np.unique(backwards, return_index=True)
        for proc, at in zip(names.tolist(), last.tolist(), strict=True):
            self._last_drain[proc] = int(kind[::-1][at])

    def _process_codes(self, column: pa.Array, rows: np.ndarray) -> np.ndarray:
        if not rows.any():
            return np.zeros(len(column), np.int32)
        dictionary, indices = _dictionary(column)
        table = self._processes
        lookup = np.array(
            [table.setdefault(name, len(table)) for name in dictionary.to_pylist()], np.int32
        )
        return lookup[indices] if lookup.size else np.zeros(len(column), np.int32)

    def _make_room(self, size: int) -> None:
        if size <= self._flags.size:
            return
        length = max(size, self._flags.size * 3 // 2)
        self._flags = _grown(self._flags, length)
        self._received = _grown(self._received, length)
        self._open = _grown(self._open, length)
        self._sender = _grown(self._sender, length)

    def _move(self, moves: list[Move]) -> None:
        for move in moves:
            old, new = (
                slice(move.old, move.old + move.length),
                slice(move.new, move.new + move.length),
            )
            for state in (self._flags, self._received, self._open, self._sender):
                state[new] = state[old]
                state[old] = 0
            shifted = [
                key for key in self._other_senders if move.old <= key[1] < move.old + move.length
            ]
            for proc, code in shifted:
                count = self._other_senders.pop((proc, code))
                self._other_senders[proc, code - move.old + move.new] = count

    def _id_set(self, mask: np.ndarray) -> IdSet:
        codes = np.flatnonzero(mask)
        if codes.size == 0:
            return IdSet(count=0, ids=())
        ids = self._ids.decode(codes)
        first = ids
        if len(ids) > MAX_IDS:
            chosen = pc.select_k_unstable(ids, k=MAX_IDS, sort_keys=[("ids", "ascending")])
            first = ids.take(chosen)
        ordered = first.take(pc.array_sort_indices(first))
        return IdSet(count=int(codes.size), ids=tuple(ordered.to_pylist()))


def _grown(state: np.ndarray, length: int) -> np.ndarray:
    bigger = np.zeros(length, state.dtype)
    bigger[: state.size] = state
    return bigger


def _dictionary(column: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """The column's distinct values and each row's index into them (nulls as index 0)."""
    encoded = column if pa.types.is_dictionary(column.type) else pc.dictionary_encode(column)
    indices = encoded.indices
    if indices.null_count:
        indices = pc.fill_null(indices, 0)
    return encoded.dictionary, np.asarray(indices)


def _small_codes(column: pa.Array, codes: dict[str, int]) -> np.ndarray:
    """Each row's code from `codes` (uint8), `_UNKNOWN` for a value not in it."""
    dictionary, indices = _dictionary(column)
    lookup = np.array([codes.get(name, _UNKNOWN) for name in dictionary.to_pylist()], np.uint8)
    if lookup.size == 0:
        return np.full(len(column), _UNKNOWN, np.uint8)
    return lookup[indices]
