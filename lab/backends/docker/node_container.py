"""One node as a container: start, docker kill, pause/unpause, stop; its log into events.

The container is created once (by testcontainers, on the run's internal network)
and then started again after a kill: same ports, same data volume. Its stdout is
the node's operational log: each line goes to `nodes/<node>/broker.log` and,
parsed by the target, into the same `broker.log` and `node.role` events as a
local process's (lab.backends.node_log).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path

from docker.errors import APIError, NotFound
from docker.models.containers import Container
from requests.exceptions import RequestException

from lab.backends.node_log import take_log_line
from lab.ground.errors import ClusterError
from lab.ground.events import Events
from lab.ground.nodes import NodePlan
from lab.targets.protocol import Target

__all__ = ["NodeContainer"]


class NodeContainer:
    """A node's container. `create` makes and starts it the first time."""

    def __init__(
        self,
        plan: NodePlan,
        create: Callable[[], Container],
        target: Target,
        events: Events,
        detached: bool,
        on_start: Callable[[int], None] | None = None,
    ) -> None:
        self.plan = plan
        self._on_start = on_start  # given the container's main process, after each start
        self.target = target
        self.events = events
        self.detached = detached
        self.container: Container | None = None
        self._ending = False  # the lab is ending the container (kill, stop)
        self.paused = False
        self.starts = 0
        self._create = create
        self._reader: threading.Thread | None = None
        self.log_path: Path = plan.node_dir / "broker.log"
        self.stderr_path: Path = plan.node_dir / "stderr.log"

    @property
    def name(self) -> str:
        return self.plan.name

    def _state(self) -> dict[str, object]:
        if self.container is None:
            return {}
        try:
            self.container.reload()
        except (NotFound, APIError, RequestException):
            return {}
        state: dict[str, object] = self.container.attrs.get("State") or {}
        return state

    @property
    def pid(self) -> int | None:
        """The node's main process as the engine's host sees it (None when not running)."""
        pid = self._state().get("Pid")
        return pid if isinstance(pid, int) and pid > 0 else None

    @property
    def running(self) -> bool:
        """Running or paused: the container's process exists."""
        return self._state().get("Status") in ("running", "paused")

    @property
    def exit_code(self) -> object:
        return self._state().get("ExitCode", "?")

    def start(self) -> None:
        if self.running:
            return
        self._ending = False
        if self.container is None:
            self.container = self._create()
        else:
            try:
                self.container.start()
            except (APIError, RequestException) as exc:
                raise ClusterError(f"node {self.name}: docker start failed: {exc}") from exc
        self.paused = False
        self.starts += 1
        if self._on_start is not None:
            pid = self.pid
            if pid is None:
                raise ClusterError(f"node {self.name}: its container stopped as it started")
            self._on_start(pid)
        if not self.detached:
            since = self._started_at()
            self._reader = threading.Thread(
                target=self._read_log, args=(since,), name=f"log-{self.name}", daemon=True
            )
            self._reader.start()
        self.events.emit("node.start", self.name, pid=self.pid, container=self.container.name)

    def _started_at(self) -> float:
        text = str(self._state().get("StartedAt", ""))
        # RFC 3339 with nanoseconds: keep microseconds for datetime.
        head, _, frac = text.rstrip("Z").partition(".")
        try:
            moment = datetime.fromisoformat(f"{head}.{(frac + '000000')[:6]}+00:00")
        except ValueError:
            return 0.0
        return moment.timestamp()

    def _lines(self, since: float) -> Iterator[str]:
        assert self.container is not None
        pending = b""
        stream = self.container.logs(
            stdout=True, stderr=False, stream=True, follow=True, since=since
        )
        for chunk in stream:
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for raw in lines:
                yield raw.decode("utf-8", "replace") + "\n"
        if pending:
            yield pending.decode("utf-8", "replace")

    def _read_log(self, since: float) -> None:
        with (
            contextlib.suppress(APIError, RequestException, OSError),
            self.log_path.open("a", buffering=1, encoding="utf-8") as log,
        ):
            for line in self._lines(since):
                take_log_line(line, log, self.target, self.events, self.name)
        self._note_exit()

    def _note_exit(self) -> None:
        """The log ended: when the lab did not end the node, it ended by itself."""
        if self._ending or self.container is None:
            return
        with contextlib.suppress(APIError, RequestException, NotFound):
            self.container.wait(timeout=10)
            if not self._ending and self._state().get("Status") == "exited":
                self.events.emit("node.exit", self.name, status=self.exit_code)

    def exit_detail(self) -> str:
        self.save_stderr()
        return f"exited with status {self.exit_code}; see {self.stderr_path}"

    def save_stderr(self) -> None:
        """Write what the node printed on stderr (all its starts) to `stderr.log`."""
        if self.container is None:
            return
        with contextlib.suppress(APIError, RequestException, OSError):
            self.stderr_path.write_bytes(self.container.logs(stdout=False, stderr=True))

    def kill(self) -> None:
        """docker kill (SIGKILL): no chance to flush or close anything."""
        if self.container is None or not self.running:
            return
        self._ending = True
        # The moment it died is the moment the kill is ordered: the engine delivers SIGKILL
        # early in the call and returns only once it has seen the container stop (half a
        # second and more on a busy engine), by which time a cluster manager that found the
        # node gone may have promoted a backup — no second master. Not once `wait` returns
        # either, nor once its log has been read to the end.
        self.events.emit("node.kill", self.name, signal="SIGKILL")
        try:
            self.container.kill()
        except (NotFound, APIError, RequestException):
            return  # already gone: it is dead all the same
        with contextlib.suppress(NotFound, APIError, RequestException):
            self.container.wait(timeout=30)
        self._join_reader()
        self.paused = False

    def pause(self) -> None:
        """docker pause (the cgroup freezer): the node freezes, as in a long full-GC stall."""
        if self.container is None or self._state().get("Status") != "running":
            return
        try:
            self.container.pause()
        except (APIError, RequestException):
            return
        self.paused = True
        self.events.emit("node.pause", self.name)

    def resume(self) -> None:
        if self.container is None or self._state().get("Status") != "paused":
            self.paused = False
            return
        try:
            self.container.unpause()
        except (APIError, RequestException):
            return
        self.paused = False
        self.events.emit("node.resume", self.name)

    def stop(self, timeout_s: float = 5.0) -> None:
        """A clean stop (SIGTERM), SIGKILL when it does not end in time."""
        if self.container is None or not self.running:
            return
        self._ending = True
        with contextlib.suppress(NotFound, APIError, RequestException):
            if self._state().get("Status") == "paused":
                self.container.unpause()
            self.container.stop(timeout=int(timeout_s))
            self.container.wait(timeout=timeout_s + 30)
        self._join_reader()
        self.save_stderr()
        self.paused = False
        self.events.emit("node.stop", self.name, status=self.exit_code)

    def _join_reader(self) -> None:
        if self._reader is not None:
            self._reader.join(timeout=5)
            self._reader = None
