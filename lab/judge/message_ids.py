"""Message ids as small integer codes, so the checker's state is a few numpy arrays.

The lab's producers name their messages `<process>-<seq>` (`p3-1207`): such an id is a
prefix of 1 to 7 bytes, a dash and a decimal sequence number without a leading zero. Ids of
that shape are read from the Arrow string buffers with numpy (no Python string is made) and
coded `base[prefix] + seq`: each prefix owns a block of codes, dense in the sequence number,
that doubles when a higher number comes (the block moves to the end of the code space; the
caller moves its state with it, `Move`). Any other id (`ghost`, `p1-007`, a sequence number
far beyond what the history's size explains) gets the next free code through a dict, and
stays there: a prefix's block never grows over a number already given to the dict.

So the codes handed out stay within a small multiple of the number of distinct messages,
bounded by eight codes per operation read (`_BUDGET_PER_ROW`) whatever the ids look like.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["MessageIds", "Move"]

_MAX_DIGITS = 18
_MAX_PREFIX = 7
_MIN_BLOCK = 1024
_BUDGET_PER_ROW = 8
_BUDGET_BASE = 1 << 16
_PAD = 8
_DASH, _ZERO = 0x2D, 0x30
_NO_LIMIT = np.iinfo(np.int64).max
_HIGH_NIBBLES = np.uint64(0xF0F0F0F0F0F0F0F0)
_ZEROS = np.uint64(0x3030303030303030)
_SIXES = np.uint64(0x0606060606060606)
_LANE_LIMITS = np.array([1 << (8 * lane) for lane in range(8)], np.uint64)
_KEEP = np.array([((1 << 64) - 1) ^ ((1 << (64 - 8 * n)) - 1) for n in range(9)], np.uint64)
_LANES_0_4 = np.uint64(0x000000FF000000FF)
_SCALE_0_4 = np.uint64(100 + (1000000 << 32))
_SCALE_2_6 = np.uint64(1 + (10000 << 32))


@dataclass(frozen=True)
class Move:
    """Codes [old, old + length) now live at [new, new + length)."""

    old: int
    new: int
    length: int


class MessageIds:
    """Hands out codes for message ids; `encode` a batch, `decode` codes back to ids."""

    def __init__(self) -> None:
        self.size = 0
        """Codes handed out so far: every code is below it."""
        self._rows = 0
        self._keys = np.empty(0, np.uint64)  # prefix keys, sorted
        self._key_slots = np.empty(0, np.int64)  # the slot of each key
        self._prefixes: list[str] = []  # slot → prefix text
        self._base = np.empty(0, np.int64)  # slot → first code of its block
        self._cap = np.empty(0, np.int64)  # slot → block length (0: none yet)
        self._limit = np.empty(0, np.int64)  # slot → lowest sequence number in the dict
        self._others: dict[str, int] = {}

    def encode(self, values: pa.Array, need: np.ndarray) -> tuple[np.ndarray, list[Move]]:
        """The code of each row's id where `need` is set (-1 elsewhere), and the blocks moved.

        `values` is a string array with no null where `need` is set.
        """
        codes = np.full(len(values), -1, np.int64)
        rows = np.flatnonzero(need)
        if rows.size == 0:
            return codes, []
        self._rows += int(rows.size)
        if not pa.types.is_string(values.type):
            values = values.cast(pa.string())
        starts, ends, padded = _string_buffers(values)
        starts, ends = starts[rows], ends[rows]
        seq, prefix_length, shaped = _parse_ids(starts, ends, padded)
        keyed = rows[shaped]
        keys = _prefix_keys(padded, starts[shaped], prefix_length[shaped])
        slots = self._slots_of(keys, padded, starts[shaped], prefix_length[shaped])
        seqs = seq[shaped]
        moves = self._fit(slots, seqs)
        fits = seqs < self._cap[slots]
        codes[keyed[fits]] = self._base[slots[fits]] + seqs[fits]
        spilled = ~fits
        if spilled.any():
            np.minimum.at(self._limit, slots[spilled], seqs[spilled])
        others = np.concatenate([rows[~shaped], keyed[spilled]])
        if others.size:
            codes[others] = self._other_codes(values.take(pa.array(others)).to_pylist())
        return codes, moves

    def decode(self, codes: np.ndarray) -> pa.Array:
        """The ids of `codes` (codes handed out by `encode`), as a string array."""
        parts: list[pa.Array] = []
        live = np.flatnonzero(self._cap > 0)
        in_block = np.zeros(codes.size, bool)
        if live.size and codes.size:
            order = np.argsort(self._base[live])
            bases, caps, slots = self._base[live][order], self._cap[live][order], live[order]
            where = np.searchsorted(bases, codes, side="right") - 1
            inside = where >= 0
            where = np.maximum(where, 0)
            in_block = inside & (codes < bases[where] + caps[where])
            chosen = where[in_block]
            prefixes = pa.array(self._prefixes, pa.string()).take(pa.array(slots[chosen]))
            numbers = pc.cast(pa.array(codes[in_block] - bases[chosen]), pa.string())
            parts.append(pc.binary_join_element_wise(prefixes, numbers, "-"))
        rest = codes[~in_block]
        if rest.size:
            by_code = {code: text for text, code in self._others.items()}
            parts.append(pa.array([by_code[int(code)] for code in rest], pa.string()))
        if not parts:
            return pa.array([], pa.string())
        joined = pa.concat_arrays(parts)
        if rest.size == 0 or rest.size == codes.size:
            return joined
        placed = np.concatenate([np.flatnonzero(in_block), np.flatnonzero(~in_block)])
        return joined.take(pa.array(np.argsort(placed)))

    def _slots_of(
        self, keys: np.ndarray, padded: np.ndarray, starts: np.ndarray, lengths: np.ndarray
    ) -> np.ndarray:
        slots = self._lookup(keys)
        missing = slots < 0
        if missing.any():
            new, first = np.unique(keys[missing], return_index=True)
            at = np.flatnonzero(missing)[first]
            for key, row in zip(new.tolist(), at.tolist(), strict=True):
                begin = int(starts[row]) + _PAD
                text = padded[begin : begin + int(lengths[row])].tobytes().decode("utf-8")
                self._add_prefix(key, text)
            slots[missing] = self._lookup(keys[missing])
        return slots

    def _lookup(self, keys: np.ndarray) -> np.ndarray:
        if self._keys.size == 0:
            return np.full(keys.size, -1, np.int64)
        at = np.minimum(np.searchsorted(self._keys, keys), self._keys.size - 1)
        return np.where(self._keys[at] == keys, self._key_slots[at], -1)

    def _add_prefix(self, key: int, text: str) -> None:
        slot = len(self._prefixes)
        self._prefixes.append(text)
        at = int(np.searchsorted(self._keys, np.uint64(key)))
        self._keys = np.insert(self._keys, at, np.uint64(key))
        self._key_slots = np.insert(self._key_slots, at, slot)
        self._base = np.append(self._base, 0)
        self._cap = np.append(self._cap, 0)
        self._limit = np.append(self._limit, _NO_LIMIT)

    def _fit(self, slots: np.ndarray, seqs: np.ndarray) -> list[Move]:
        """Grow the blocks that this batch's numbers overflow, within budget and limit."""
        if slots.size == 0:
            return []
        highest = np.full(self._cap.size, -1, np.int64)
        np.maximum.at(highest, slots, seqs)
        moves: list[Move] = []
        for slot in np.flatnonzero(highest >= self._cap).tolist():
            cap = int(self._cap[slot])
            budget = _BUDGET_PER_ROW * self._rows + _BUDGET_BASE - self.size
            wanted = max(2 * cap, int(highest[slot]) + 1, _MIN_BLOCK)
            grown = min(wanted, int(self._limit[slot]), budget)
            if grown <= cap:
                continue
            if cap:
                moves.append(Move(old=int(self._base[slot]), new=self.size, length=cap))
            self._base[slot] = self.size
            self._cap[slot] = grown
            self.size += grown
        return moves

    def _other_codes(self, ids: list[str]) -> np.ndarray:
        others = self._others
        found = np.empty(len(ids), np.int64)
        for number, text in enumerate(ids):
            code = others.get(text)
            if code is None:
                code = others[text] = self.size
                self.size += 1
            found[number] = code
        return found


def _string_buffers(values: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each row's start and end (int64) in `padded`'s unpadded frame, and the data padded
    with `_PAD` zero bytes on both sides."""
    buffers = values.buffers()
    offsets = np.frombuffer(
        buffers[1], dtype=np.int32, count=len(values) + 1, offset=values.offset * 4
    ).astype(np.int64)
    data = buffers[2]
    raw = np.frombuffer(data, np.uint8) if data is not None else np.empty(0, np.uint8)
    padded = np.zeros(raw.size + 2 * _PAD, np.uint8)
    padded[_PAD : _PAD + raw.size] = raw
    return offsets[:-1], offsets[1:], padded


def _parse_ids(
    starts: np.ndarray, ends: np.ndarray, padded: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row: the sequence number, the prefix length, and whether the id has the shape.

    The last 8 bytes of each id are read as one little-endian word: its trailing digits are
    counted and converted eight lanes at a time; ids ending in 8 digits or more are
    finished a digit at a time (`_long_numbers`).
    """
    word = _words(padded)[ends - 8 + _PAD]
    lanes = ((word & _HIGH_NIBBLES) ^ _ZEROS) | (((word + _SIXES) & _HIGH_NIBBLES) ^ _ZEROS)
    digits = np.int64(8) - np.searchsorted(_LANE_LIMITS, lanes, side="right").astype(np.int64)
    kept = _KEEP[digits]
    number = ((word & kept) | (_ZEROS & ~kept)) - _ZEROS
    number = number * np.uint64(10) + (number >> np.uint64(8))
    number = (
        (number & _LANES_0_4) * _SCALE_0_4 + ((number >> np.uint64(16)) & _LANES_0_4) * _SCALE_2_6
    ) >> np.uint64(32)
    seq = number.astype(np.int64)
    long = np.flatnonzero(digits == 8)
    if long.size:
        seq[long], digits[long] = _long_numbers(starts[long], ends[long], padded)
    dash = ends - 1 - digits
    prefix_length = dash - starts
    first_digit = padded[np.maximum(ends - digits, 0) + _PAD]
    shaped = (
        (digits >= 1)
        & (digits <= _MAX_DIGITS)
        & (prefix_length >= 1)
        & (prefix_length <= _MAX_PREFIX)
        & (padded[np.maximum(dash, -_PAD) + _PAD] == _DASH)
        & ((digits == 1) | (first_digit != _ZERO))
    )
    return seq, prefix_length, shaped


def _long_numbers(
    starts: np.ndarray, ends: np.ndarray, padded: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Trailing digits (up to `_MAX_DIGITS` + 1) and their value, a digit at a time."""
    count = starts.size
    seq = np.zeros(count, np.int64)
    digits = np.zeros(count, np.int64)
    length = ends - starts
    active = np.flatnonzero(length > 0)
    position = ends[active] - 1 + _PAD
    scale = 1
    for place in range(_MAX_DIGITS + 1):
        if active.size == 0:
            break
        digit = padded[position] - np.uint8(_ZERO)
        more = (digit < 10) & (length[active] > place)
        active, position, digit = active[more], position[more] - 1, digit[more]
        if place < _MAX_DIGITS:
            seq[active] += digit.astype(np.int64) * scale
        digits[active] += 1
        scale *= 10
    return seq, digits


def _words(padded: np.ndarray) -> np.ndarray:
    """Every 8-byte window of `padded` as a little-endian uint64 (an unaligned view)."""
    return np.ndarray(
        shape=(padded.size - 7,), dtype="<u8", buffer=padded.data, offset=0, strides=(1,)
    )


def _prefix_keys(padded: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The prefix's bytes (1 to 7) and its length packed into one uint64."""
    word = _words(padded)[starts + _PAD]
    mask = (np.uint64(1) << (lengths.astype(np.uint64) * np.uint64(8))) - np.uint64(1)
    return (word & mask) | (lengths.astype(np.uint64) << np.uint64(56))
