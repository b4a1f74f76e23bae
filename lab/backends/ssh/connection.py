"""SSH to the hosts, with AsyncSSH: one connection per host, many channels on it.

AsyncSSH (a maintained SSHv2 library on `cryptography`, which the lab uses already) rather
than the `ssh` command: host keys checked against the hosts file's known_hosts in-process,
commands, file transfers (SFTP), log streams and the management API's port forwards all as
channels of one connection per host, without a process per command or a thread per channel.
The lab is synchronous; `SshLoop` runs AsyncSSH's event loop on a thread of its own and every
call here waits for its answer (with a deadline), so callers see plain blocking methods.

    loop = SshLoop()
    conn = HostConnection(host, loop)      # connected; host key checked
    conn.run("uname -r").stdout
    conn.put(Path("pylib.tar.gz"), "/var/tmp/lab/…/pylib.tar.gz")
    port = conn.forward(8080)              # 127.0.0.1:port here → the host's 127.0.0.1:8080
    there = conn.forward_back(2181)        # the host's 127.0.0.1:there → 127.0.0.1:2181 here
    follower = conn.follow("tail -F log", on_line, on_end)
    conn.close(); loop.close()
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import secrets
import shlex
import threading
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from lab.backends.ssh.hosts_file import Host
from lab.backends.ssh.quiet_asyncssh import asyncssh
from lab.ground.errors import ClusterError

__all__ = ["Done", "Follower", "HostConnection", "SshLoop", "probe"]

T = TypeVar("T")
CONNECT_TIMEOUT_S = 10.0


class SshLoop:
    """An asyncio event loop on a daemon thread, for one cluster's connections."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="ssh", daemon=True)
        self._thread.start()

    def call(self, coro: Coroutine[Any, Any, T], timeout_s: float, what: str) -> T:
        """Run `coro` on the loop and wait for it: from any thread but the loop's own, which
        would wait for itself (a ClusterError at once, not a hung lab)."""
        if threading.current_thread() is self._thread:
            coro.close()
            raise ClusterError(f"{what}: asked from the SSH loop's own thread, which would hang")
        if self.loop.is_closed():  # a node's exit read just as the cluster closed
            coro.close()
            raise ClusterError(f"{what}: the SSH connections are closed")
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result(timeout_s)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise ClusterError(f"{what}: no answer within {timeout_s:g} s") from None
        except (asyncssh.Error, OSError) as exc:
            raise ClusterError(f"{what}: {exc}") from exc

    def close(self) -> None:
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=5)
        if not self._thread.is_alive():
            self.loop.close()


@dataclass(frozen=True)
class Done:
    status: int
    stdout: str
    stderr: str


def _options(host: Host) -> dict[str, Any]:
    return {
        "host": host.address,
        "port": host.port,
        "username": host.user,
        "client_keys": [str(host.key)],
        "known_hosts": str(host.known_hosts),
        "connect_timeout": CONNECT_TIMEOUT_S,
        "keepalive_interval": 5,
        "keepalive_count_max": 4,
        "agent_path": None,
    }


async def _probe(host: Host, command: str) -> Done:
    async with asyncssh.connect(**_options(host)) as conn:
        done = await conn.run(command, check=False, timeout=60)
        return Done(int(done.exit_status or 0), str(done.stdout or ""), str(done.stderr or ""))


def probe(host: Host, command: str) -> Done:
    """Connect, run one command, disconnect (a check before anything starts; no loop kept)."""
    try:
        return asyncio.run(asyncio.wait_for(_probe(host, command), CONNECT_TIMEOUT_S + 60))
    except (asyncssh.Error, OSError, TimeoutError) as exc:
        raise ClusterError(f"host {host.name} ({host.address}:{host.port}): {exc}") from exc


class Follower:
    """A command whose output lines are handed on as they come (a node's log)."""

    def __init__(self, future: concurrent.futures.Future[None]) -> None:
        self.future = future

    @property
    def done(self) -> bool:
        return self.future.done()

    def wait(self, timeout_s: float) -> bool:
        with contextlib.suppress(
            concurrent.futures.TimeoutError, concurrent.futures.CancelledError
        ):
            self.future.result(timeout_s)
        return self.future.done()

    def cancel(self) -> None:
        self.future.cancel()


class HostConnection:
    """One SSH connection to a host, opened at once (a ClusterError when it cannot be)."""

    def __init__(self, host: Host, loop: SshLoop) -> None:
        self.host = host
        self.loop = loop
        self.where = f"host {host.name} ({host.address})"

        async def connect() -> asyncssh.SSHClientConnection:
            return await asyncssh.connect(**_options(host))

        self._conn = loop.call(connect(), CONNECT_TIMEOUT_S + 5, f"{self.where}: connect")
        self._listeners: list[asyncssh.SSHListener] = []
        self._shell: asyncssh.SSHClientProcess[str] | None = None
        self._shell_lock: asyncio.Lock | None = None

    def quick(self, line: str, timeout_s: float = 30.0) -> Done:
        """Run a short shell line in the host's standing shell (one per connection, opened on
        first use): no new channel and no new shell per command, so a signal to a node goes
        out within a round trip. Output is stdout and stderr together."""
        marker = f"lab-done-{secrets.token_hex(6)}"

        async def go() -> Done:
            if self._shell_lock is None:
                self._shell_lock = asyncio.Lock()
            async with self._shell_lock:
                if self._shell is None or self._shell.exit_status is not None:
                    self._shell = await self._conn.create_process("exec sh", encoding="utf-8")
                shell = self._shell
                shell.stdin.write(f'{{ {line}\n}} </dev/null 2>&1; echo "{marker} $?"\n')
                out: list[str] = []
                while True:
                    got = await asyncio.wait_for(shell.stdout.readline(), timeout_s)
                    if not got:
                        self._shell = None
                        raise ClusterError(f"{self.where}: the standing shell ended")
                    if got.startswith(marker):
                        return Done(int(got.split()[1]), "".join(out), "")
                    out.append(got)

        try:
            return self.loop.call(go(), timeout_s + 5, f"{self.where}: {line[:80]}")
        except ClusterError:
            self._shell = None  # a later call opens a fresh one
            raise

    def run(
        self, command: str, *, input: bytes | None = None, timeout_s: float = 60.0,
        check: bool = True,
    ) -> Done:  # fmt: skip
        """Run `command` (a shell line) on the host; a ClusterError when it fails and `check`."""

        async def go() -> Done:
            done = await self._conn.run(
                command, input=input, check=False, timeout=timeout_s, encoding=None
            )
            out, err = (done.stdout or b""), (done.stderr or b"")
            return Done(
                int(done.exit_status if done.exit_status is not None else -1),
                out.decode("utf-8", "replace") if isinstance(out, bytes) else str(out),
                err.decode("utf-8", "replace") if isinstance(err, bytes) else str(err),
            )

        done = self.loop.call(go(), timeout_s + 10, f"{self.where}: {command[:80]}")
        if check and done.status != 0:
            detail = (done.stderr or done.stdout).strip().splitlines()
            raise ClusterError(
                f"{self.where}: `{command[:120]}` failed ({done.status}): "
                f"{detail[-1] if detail else 'no output'}"
            )
        return done

    def read(self, command: str, timeout_s: float = 300.0) -> bytes:
        """The raw stdout of `command` (an archive of a node's folder)."""

        async def go() -> bytes:
            done = await self._conn.run(command, check=False, timeout=timeout_s, encoding=None)
            if done.exit_status != 0:
                err = done.stderr or b""
                text = err.decode("utf-8", "replace") if isinstance(err, bytes) else str(err)
                raise ClusterError(f"{self.where}: `{command[:120]}` failed: {text.strip()}")
            out = done.stdout or b""
            return out if isinstance(out, bytes) else str(out).encode()

        return self.loop.call(go(), timeout_s + 10, f"{self.where}: {command[:80]}")

    def put(self, local: Path, remote: str, timeout_s: float = 600.0) -> None:
        """Copy a file to the host (SFTP)."""

        async def go() -> None:
            async with self._conn.start_sftp_client() as sftp:
                await sftp.put(str(local), remote)

        self.loop.call(go(), timeout_s, f"{self.where}: copy {local.name}")

    def write(self, remote: str, data: bytes, mode: int = 0o600) -> None:
        """Write a small file on the host, readable by its owner only unless `mode` says."""
        quoted = shlex.quote(remote)
        moved = f"chmod {mode:o} {quoted}.tmp && mv {quoted}.tmp {quoted}"
        self.run(f"umask 077 && cat > {quoted}.tmp && {moved}", input=data)

    def forward(self, remote_port: int) -> int:
        """A port on this machine's 127.0.0.1 that reaches the host's 127.0.0.1:`remote_port`."""

        async def go() -> asyncssh.SSHListener:
            return await self._conn.forward_local_port("127.0.0.1", 0, "127.0.0.1", remote_port)

        listener = self.loop.call(go(), 30.0, f"{self.where}: forward port {remote_port}")
        self._listeners.append(listener)
        return int(listener.get_port())

    def forward_back(self, local_port: int) -> int:
        """A port on the host's 127.0.0.1 that reaches this machine's 127.0.0.1:`local_port`
        (a service the lab runs for the run's nodes, e.g. a ZooKeeper)."""

        async def go() -> asyncssh.SSHListener:
            return await self._conn.forward_remote_port("127.0.0.1", 0, "127.0.0.1", local_port)

        listener = self.loop.call(go(), 30.0, f"{self.where}: forward back port {local_port}")
        self._listeners.append(listener)
        return int(listener.get_port())

    def follow(
        self, command: str, on_line: Callable[[str], None], on_end: Callable[[], None]
    ) -> Follower:
        """Run `command`, handing each line of its stdout to `on_line` (on the SSH thread:
        keep it short) and calling `on_end` once it has ended, whatever the way."""

        async def go() -> None:
            try:
                async with self._conn.create_process(command, stdin=asyncssh.DEVNULL) as process:
                    async for line in process.stdout:
                        on_line(str(line))
            except (asyncssh.Error, OSError):
                pass
            finally:
                on_end()

        return Follower(asyncio.run_coroutine_threadsafe(go(), self.loop.loop))

    def close(self) -> None:
        async def go() -> None:
            for listener in self._listeners:
                listener.close()
            self._conn.close()
            with contextlib.suppress(asyncssh.Error, OSError):
                await self._conn.wait_closed()

        with contextlib.suppress(ClusterError):
            self.loop.call(go(), 10.0, f"{self.where}: close")
