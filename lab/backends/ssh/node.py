"""One node as a process on its host: started, killed, frozen and stopped over SSH; its log
streamed back into the run's events as it is written.

On the host each node runs under a small wrapper (`RUN_NODE`, shipped into the run's folder
there): started in a session of its own (`setsid`), so it outlives the SSH channel that
started it, the wrapper writes the node's pid to `node.pid`, waits for it — so a node that
dies is reaped at once, whatever the host's init does — and writes its exit status to
`node.status`. The node's stdout is `broker.log` and its stderr `stderr.log`, beside its
configuration, in `<run folder on the host>/nodes/<node>/`.

The log is followed with `tail --pid=<pid> -F` on a channel of its own: each line goes to the
local `nodes/<node>/broker.log` and to the target's parser (lab.backends.node_log), and the
stream's end says the node has ended (`node.exit` when the lab did not end it).
"""

from __future__ import annotations

import shlex
import threading
from pathlib import Path

from lab.backends.node_log import take_log_line
from lab.backends.ssh.connection import Follower, HostConnection
from lab.ground.errors import ClusterError
from lab.ground.events import Events
from lab.ground.nodes import NodePlan
from lab.targets.protocol import Target

__all__ = ["RUN_NODE", "HostNode"]

RUN_NODE = """#!/bin/sh
# run-node NODE_DIR COMMAND…: the node in the background, its pid, then its exit status.
dir=$1; shift
cd "$dir" || exit 111
rm -f node.status
"$@" </dev/null >>broker.log 2>>stderr.log &
child=$!
echo "$child" >> pids
echo "$child" > node.pid.tmp && mv node.pid.tmp node.pid
wait "$child"
echo $? > node.status.tmp && mv node.status.tmp node.status
"""
_WAIT = "for i in $(seq 1 {n}); do [ -e node.status ] && exit 0; sleep 0.01; done; exit 1"


class HostNode:
    """A node on its host. Restarting reuses the plan: same ports, same data."""

    def __init__(
        self,
        plan: NodePlan,
        conn: HostConnection,
        node_dir: str,
        command: list[str],
        target: Target,
        events: Events,
        detached: bool,
    ) -> None:
        self.plan = plan
        self.conn = conn
        self.node_dir = node_dir
        self.command = command
        self.target = target
        self.events = events
        self.detached = detached
        self.pid: int | None = None
        self.paused = False
        self.starts = 0  # how many times it was started
        self._alive = False
        self._ending = False
        self._follower: Follower | None = None
        self._ended = threading.Event()
        self.log_path: Path = plan.node_dir / "broker.log"

    @property
    def host(self) -> str:
        return self.conn.host.name

    @property
    def running(self) -> bool:
        return self._alive

    def _in_dir(self, line: str, **kwargs: object) -> str:
        return self.conn.run(f"cd {shlex.quote(self.node_dir)} && {line}", **kwargs).stdout  # type: ignore[arg-type]

    def start(self) -> None:
        if self._alive:
            return
        self._ending = False
        size = self._in_dir("touch broker.log stderr.log && wc -c < broker.log").strip()
        runner = shlex.quote(f"{self.node_dir}/../../bin/run-node")
        launch = shlex.join(["setsid", "sh", runner, self.node_dir, *self.command])
        out = self.conn.run(
            f"cd {shlex.quote(self.node_dir)} || exit 1; rm -f node.pid node.status; "
            f"{launch} >/dev/null 2>&1 </dev/null & "
            "for i in $(seq 1 1000); do [ -s node.pid ] && break; sleep 0.01; done; cat node.pid"
        ).stdout.strip()
        if not out.isdigit():
            raise ClusterError(f"node {self.plan.name} on host {self.host} did not start: {out}")
        self.pid = int(out)
        self.starts += 1
        self._alive = True
        self.paused = False
        if not self.detached:
            self._follow(int(size or 0))
        self.events.emit("node.start", self.plan.name, pid=self.pid, host=self.host)

    def _follow(self, offset: int) -> None:
        self._ended.clear()
        log = self.log_path.open("a", buffering=1, encoding="utf-8")
        path = shlex.quote(f"{self.node_dir}/broker.log")
        command = f"exec tail --pid={self.pid} -s 0.1 -c +{offset + 1} -F {path} 2>/dev/null"

        def on_line(line: str) -> None:
            take_log_line(line, log, self.target, self.events, self.plan.name)

        def on_end() -> None:  # on the SSH loop's thread: nothing here may wait for it
            log.close()
            ending = self._ending
            self._alive = False
            self._ended.set()
            if not ending:  # ended by itself: its exit status is read over SSH, elsewhere
                threading.Thread(target=self._exited, name=f"exit-{self.plan.name}").start()

        self._follower = self.conn.follow(command, on_line, on_end)

    def _exited(self) -> None:
        self.events.emit("node.exit", self.plan.name, status=self._status(), host=self.host)

    def _status(self) -> str:
        try:
            return self._in_dir("cat node.status 2>/dev/null || echo '?'", check=False).strip()
        except ClusterError:
            return "?"

    def _signal(self, name: str, then_wait_s: float | None = None) -> bool:
        """Signal the node (in the host's standing shell); with `then_wait_s`, also wait that
        long for it to end. Whether the signal was delivered."""
        if not self._alive or self.pid is None:
            return False
        line = f"kill -{name} {self.pid} || exit 9"
        if then_wait_s is not None:
            n = max(1, int(then_wait_s * 100))
            line = f"( {line}; cd {shlex.quote(self.node_dir)} && {_WAIT.format(n=n)} )"
        else:
            line = f"( {line} )"
        done = self.conn.quick(line, timeout_s=(then_wait_s or 0) + 30)
        return done.status != 9

    def _wait_ended(self, timeout_s: float) -> bool:
        n = max(1, int(timeout_s * 100))
        line = f"( cd {shlex.quote(self.node_dir)} && {_WAIT.format(n=n)} )"
        return self.conn.quick(line, timeout_s=timeout_s + 10).status == 0

    def _ended_now(self) -> None:
        self._alive = False
        self.paused = False
        if self._follower is not None:
            self._ended.wait(timeout=5)
            self._follower = None

    def kill(self) -> None:
        """kill -9: no chance to flush or close anything. The moment it died is the moment the
        kill is ordered (as in containers): a round trip later a cluster manager that finds the
        node gone may have promoted another, and that is no second master."""
        if not self._alive:
            return
        self._ending = True
        self.events.emit("node.kill", self.plan.name, signal="SIGKILL", host=self.host)
        self._signal("KILL", then_wait_s=30.0)
        self._ended_now()

    def pause(self) -> None:
        """SIGSTOP: the process freezes, as in a long full-GC stall."""
        if self._signal("STOP"):
            self.paused = True
            self.events.emit("node.pause", self.plan.name)

    def resume(self) -> None:
        if self._signal("CONT"):
            was = self.paused
            self.paused = False
            if was:
                self.events.emit("node.resume", self.plan.name)

    def stop(self, timeout_s: float = 5.0) -> None:
        """SIGTERM (after SIGCONT), SIGKILL when it has not ended within `timeout_s`."""
        if not self._alive:
            return
        self._ending = True
        self._signal("CONT")
        self._signal("TERM")
        if not self._wait_ended(timeout_s):
            self._signal("KILL")
            self._wait_ended(30.0)
        status = self._status()
        self._ended_now()
        self.events.emit("node.stop", self.plan.name, status=status, host=self.host)

    def exit_detail(self) -> str:
        tail = self._in_dir("tail -c 400 stderr.log 2>/dev/null", check=False).strip()
        last = tail.splitlines()[-1] if tail else "nothing on stderr"
        return f"exited with status {self._status()} on host {self.host}: {last}"
