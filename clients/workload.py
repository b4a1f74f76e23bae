"""The workers' bookkeeping, free of I/O so it can be tested without a broker.

- `FailoverPolicy`: which URL of the failover list to try next, and after how long.
- `SendBook`: the producer's messages in flight, and the ones waiting for a re-send.
- `Pacer`: the producer's send rate, as a token bucket.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

__all__ = ["Backoff", "FailoverPolicy", "Pacer", "SendBook"]


@dataclass(frozen=True)
class Backoff:
    """Delays between rounds of connection attempts: no delay in the first round over the
    failover list, then `initial_s`, multiplied by `factor` each round, at most `max_s`."""

    initial_s: float = 0.1
    factor: float = 2.0
    max_s: float = 0.25

    def delay(self, round_number: int) -> float:
        """The delay before each attempt of round `round_number` (0 = the first round)."""
        if round_number <= 0:
            return 0.0
        return min(self.max_s, self.initial_s * self.factor ** (round_number - 1))


class FailoverPolicy:
    """Round-robin over `size` URLs. After a lost connection the next URL is tried at once,
    then the rest of the list; each further round waits longer. A connection that became
    usable (`connected`) starts the count of rounds again."""

    def __init__(self, size: int, backoff: Backoff | None = None) -> None:
        if size < 1:
            raise ValueError("the failover list is empty")
        self._size = size
        self._backoff = backoff or Backoff()
        self._index = 0
        self._tries = 0

    @property
    def index(self) -> int:
        """The URL tried last (0 before any `next`)."""
        return self._index

    def next(self) -> tuple[int, float]:
        """The URL to try next and the delay before trying it."""
        self._index = (self._index + 1) % self._size
        self._tries += 1
        return self._index, self._backoff.delay((self._tries - 1) // self._size)

    def connected(self) -> None:
        """The URL tried last gave a usable link."""
        self._tries = 0


class SendBook:
    """The producer's messages by sequence number: sent and waiting for an outcome
    (unsettled), or waiting to be re-sent after a lost connection. Both count against
    the window. Re-sends go out before new messages, lowest sequence number first."""

    def __init__(self, window: int, count: int | None = None, first_seq: int = 1) -> None:
        if window < 1:
            raise ValueError("the window must be at least 1")
        self._window = window
        self._last_seq = None if count is None else first_seq + count - 1
        self._next_seq = first_seq
        self._unsettled: dict[int, None] = {}
        self._resend: deque[int] = deque()

    @property
    def in_flight(self) -> int:
        """Messages started and without a final outcome."""
        return len(self._unsettled) + len(self._resend)

    @property
    def idle(self) -> bool:
        """No message is waiting for an outcome or a re-send."""
        return not self._unsettled and not self._resend

    @property
    def exhausted(self) -> bool:
        """Every message `count` allows has been started."""
        return self._last_seq is not None and self._next_seq > self._last_seq

    @property
    def can_start_new(self) -> bool:
        """The window and `count` allow a new message."""
        return self.in_flight < self._window and not self.exhausted

    def unsettled(self) -> list[int]:
        """The messages sent and waiting for an outcome, in the order they were sent."""
        return list(self._unsettled)

    def pending_resends(self) -> list[int]:
        """The messages waiting for a re-send, in the order they will go."""
        return list(self._resend)

    def take_resend(self) -> int | None:
        """The next message to re-send, if any; it counts as sent from now on."""
        if not self._resend:
            return None
        seq = self._resend.popleft()
        self._unsettled[seq] = None
        return seq

    def take_new(self) -> int | None:
        """A new sequence number, if the window and `count` allow one; it counts as sent
        from now on."""
        if not self.can_start_new:
            return None
        seq = self._next_seq
        self._next_seq += 1
        self._unsettled[seq] = None
        return seq

    def settle(self, seq: int) -> bool:
        """The message got a final outcome; False if it was not waiting for one."""
        if seq not in self._unsettled:
            return False
        del self._unsettled[seq]
        return True

    def connection_lost(self) -> list[int]:
        """The link went down: every unsettled message now waits for a re-send.
        Returns them (their outcome is unknown), in the order they were sent."""
        lost = list(self._unsettled)
        self._unsettled.clear()
        self._resend = deque(sorted([*self._resend, *lost]))
        return lost

    def abandon(self) -> list[int]:
        """Give up: forget every message, returning the unsettled ones (sent, no outcome)."""
        lost = list(self._unsettled)
        self._unsettled.clear()
        self._resend.clear()
        return lost


class Pacer:
    """A token bucket for `rate` messages per second (0 = no limit), holding at most
    `burst` tokens so that a pause is not followed by a catch-up burst."""

    def __init__(self, rate: float, now: float, burst: float | None = None) -> None:
        if rate < 0:
            raise ValueError("the rate cannot be negative")
        self._rate = rate
        self._burst = burst if burst is not None else max(1.0, rate / 20)
        self._tokens = 1.0
        self._stamp = now

    @property
    def unlimited(self) -> bool:
        return self._rate == 0

    def _refill(self, now: float) -> None:
        elapsed = now - self._stamp
        if elapsed > 0:
            self._tokens = min(self._burst, self._tokens + elapsed * self._rate)
        self._stamp = now

    def take(self, now: float) -> bool:
        """Use one token if there is one."""
        if self._rate == 0:
            return True
        self._refill(now)
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        return False

    def wait(self, now: float) -> float:
        """Seconds until the next token."""
        if self._rate == 0:
            return 0.0
        self._refill(now)
        return max(0.0, (1.0 - self._tokens) / self._rate)
