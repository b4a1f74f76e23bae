"""Hands work from other threads to the reactor thread.

The group's networking runs in its own thread; everything that touches the
store, the queues or AMQP links runs in the reactor thread. `post` is the one
way across: the callable runs in the reactor thread, in posting order.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from typing import TypeVar

from broker_ref.wake_pipe import WakePipe

__all__ = ["Mailbox"]

T = TypeVar("T")


class Mailbox(WakePipe):
    """Add it to the container with `container.selectable(handler=mailbox)`."""

    def __init__(self) -> None:
        super().__init__()
        self._items: deque[Callable[[], None]] = deque()
        self._lock = threading.Lock()
        self._closed = False

    def post(self, action: Callable[[], None]) -> None:
        """Run `action` in the reactor thread soon; safe from any thread."""
        with self._lock:
            if self._closed:
                return
            self._items.append(action)
        self.wake()

    def ask(self, action: Callable[[], T], timeout_s: float = 5.0) -> T:
        """Run `action` in the reactor thread and wait for its result (or its exception);
        not from the reactor thread. TimeoutError when it did not run within `timeout_s`."""
        answer: Future[T] = Future()

        def run() -> None:
            try:
                answer.set_result(action())
            except BaseException as exc:
                answer.set_exception(exc)

        self.post(run)
        return answer.result(timeout_s)

    def on_wake(self) -> None:
        """Run everything posted so far (in the reactor thread)."""
        while True:
            with self._lock:
                if not self._items:
                    return
                action = self._items.popleft()
            action()

    def release(self) -> None:
        with self._lock:
            self._closed = True
            self._items.clear()
        super().release()
