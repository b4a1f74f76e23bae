"""The hosts backend's event loop (lab.backends.ssh.connection.SshLoop): a blocking call from
the loop's own thread (a log stream's callback asking the host something) would wait for
itself forever; it is one error at once instead, and the loop goes on serving."""

from __future__ import annotations

import asyncio

import pytest

from lab.backends.ssh.connection import SshLoop
from lab.ground.errors import ClusterError


async def _answer() -> int:
    return 42


def test_a_call_from_the_loops_own_thread_is_an_error_not_a_hang() -> None:
    loop = SshLoop()
    try:
        assert loop.call(_answer(), 5.0, "ask") == 42

        async def from_inside() -> str:
            try:
                loop.call(_answer(), 5.0, "ask from a callback")
            except ClusterError as exc:
                return str(exc)
            return "no error"

        said = asyncio.run_coroutine_threadsafe(from_inside(), loop.loop).result(10)
        assert said == "ask from a callback: asked from the SSH loop's own thread, which would hang"
        assert loop.call(_answer(), 5.0, "ask again") == 42  # still serving
    finally:
        loop.close()
    with pytest.raises(ClusterError, match=r"^late: the SSH connections are closed$"):
        loop.call(_answer(), 5.0, "late")


def test_an_answer_that_never_comes_is_an_error_naming_what_was_asked() -> None:
    loop = SshLoop()
    try:
        with pytest.raises(ClusterError, match=r"^wait: no answer within 0\.2 s$"):
            loop.call(asyncio.sleep(30), 0.2, "wait")
    finally:
        loop.close()
