"""Small helpers for a proton handler: an event's endpoint, typed, and a timer task."""

from __future__ import annotations

from collections.abc import Callable

from proton import Connection, Event, Handler, Link, Session

__all__ = ["Timer", "connection_of", "link_of", "session_of"]


class Timer(Handler):
    """Runs `action` when the reactor's timer fires (`container.schedule(delay, Timer(…))`)."""

    def __init__(self, action: Callable[[], None]) -> None:
        self._action = action

    def on_timer_task(self, event: Event) -> None:
        self._action()


def connection_of(event: Event) -> Connection:
    connection = event.connection
    assert connection is not None, event
    return connection


def session_of(event: Event) -> Session:
    session = event.session
    assert session is not None, event
    return session


def link_of(event: Event) -> Link:
    link = event.link
    assert link is not None, event
    return link
