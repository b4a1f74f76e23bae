"""A rig of hosts on this machine, for running the hosts backend with nothing but itself:
N network namespaces on a bridge of the lab's own (lab.backends.ssh.rig_network), each with
Debian's sshd, host keys of its own, and a mount namespace of its own in which the lab's
checkout, the temporary folders, the home folders and /srv are empty file systems: a host
sees only what the lab ships to it over SSH, in its private working folder `/srv/lab`.

    rig = Rig(3, work_dir)
    hosts_file = rig.up()       # the hosts file the backend reads (keys and known_hosts beside)
    ...                         # lab run … --backend ssh --hosts <hosts_file>
    rig.down()                  # sshd and every process in the namespaces ended, all removed

As root only. What a rig makes is recorded (lab.backends.ssh.registry) and named after the lab
process that made it, so `reap_rigs` (run by every `lab` command) removes what a killed lab left.
A rig made with `kept` (`lab rig up`: lab.backends.ssh.rig_kept) outlives its lab: its sshd
processes are detached, and its record has no owner, so no reaper takes it.
"""

from __future__ import annotations

import contextlib
import ipaddress
import itertools
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from lab.backends.ssh.registry import Registry
from lab.backends.ssh.rig_network import (
    RIG_BLOCK,
    RigNames,
    ip_json,
    route_refusal,
    run,
    subnet_refusal,
)
from lab.backends.ssh.rig_sshd import HOST_DIR, hidden, sshd_config, start_script
from lab.backends.ssh.rig_teardown import remove_rig
from lab.ground.children import popen_options
from lab.ground.errors import SetupError
from lab.ground.locks import host_lock
from lab.ground.packages import command_present, ensure_packages, file_present

__all__ = ["HOST_DIR", "RIGS", "Rig", "SessionRig", "remove_rig", "rig_refusal"]

RIGS = Registry("rigs")
RIG_PACKAGES = {
    "openssh-server": command_present("sshd"),
    "libfaketime": file_present("/usr/lib/*/faketime/libfaketime.so.1"),
    "iptables": command_present("iptables"),
}
_SERIAL = itertools.count(1)
_SSHD_WAIT_S = 20.0
Say = Callable[[str], None]


def rig_refusal() -> str | None:
    """Why this process cannot make a rig (one line), or None."""
    if os.geteuid() != 0:
        return "the namespace rig needs root (network and mount namespaces, a bridge)"
    for tool in ("ip", "unshare", "ssh-keygen"):
        if shutil.which(tool) is None:
            return f"the namespace rig needs {tool}"
    return None


def _say_on_stderr(line: str) -> None:
    print(f"lab: rig: {line}", file=sys.stderr, flush=True)


class Rig:
    """`hosts` network namespaces with an sshd each; `work_dir` holds its keys and hosts file."""

    def __init__(
        self, hosts: int, work_dir: Path, *, say: Say | None = None, kept: str | None = None
    ) -> None:
        if not 1 <= hosts <= 9:
            raise SetupError(f"a rig has 1 to 9 hosts, not {hosts}")
        self.count = hosts
        self.kept = kept  # the state folder a kept rig belongs to (None: this process's)
        # A kept rig's serial is 0, which no rig of this process's has (they count from 1).
        self.names = RigNames(os.getpid(), 0 if kept else next(_SERIAL))
        self.stage = work_dir.resolve() / f"rig-{self.names.tag}"
        self.say = say or _say_on_stderr
        self.subnet: ipaddress.IPv4Network | None = None
        self.sshd: list[subprocess.Popen[bytes]] = []
        self.forward_rule: list[str] | None = None

    @property
    def tag(self) -> str:
        return self.names.tag

    def address(self, index: int) -> str:
        assert self.subnet is not None
        return str(self.subnet.network_address + 10 + index)

    @property
    def bridge_address(self) -> str:
        assert self.subnet is not None
        return str(self.subnet.network_address + 1)

    # -- up -------------------------------------------------------------------------------------

    def up(self) -> Path:
        """Make the rig and return its hosts file; on any failure, everything made is removed."""
        refusal = rig_refusal()
        if refusal is not None:
            raise SetupError(refusal)
        ensure_packages(RIG_PACKAGES, "the namespace rig", self.say)
        try:
            self.stage.mkdir(parents=True, exist_ok=True)
            self._keys()
            with host_lock("rig-network"):
                self.subnet = self._free_subnet()
                self._record()
                self._network()
            self._check_routes()
            for index in range(1, self.count + 1):
                self._start_sshd(index)
            return self._hosts_file()
        except BaseException:
            self.down()
            raise

    def _record(self) -> None:
        RIGS.write(
            self.tag,
            {
                "bridge": self.names.bridge,
                "netns": [self.names.netns(i) for i in range(1, self.count + 1)],
                "veths": [self.names.veth(i) for i in range(1, self.count + 1)],
                "subnet": str(self.subnet),
                "stage": str(self.stage),
                "hosts": self.count,
                **({"kept": self.kept} if self.kept else {}),
            },
            owned=not self.kept,
        )

    def _keys(self) -> None:
        keygen = ["ssh-keygen", "-q", "-t", "ed25519", "-N", ""]
        run([*keygen, "-C", f"lab-rig-{self.tag}", "-f", str(self.stage / "id_ed25519")])
        for index in range(1, self.count + 1):
            folder = self.stage / f"h{index}"
            folder.mkdir()
            run([*keygen, "-C", f"h{index}", "-f", str(folder / "ssh_host_ed25519_key")])

    def _free_subnet(self) -> ipaddress.IPv4Network:
        routes = ip_json("route", "show", "table", "all")
        addresses = ip_json("addr", "show")
        taken = {str(r.body.get("subnet")) for r in RIGS.records() if r.path.stem != self.tag}
        subnets = list(RIG_BLOCK.subnets(new_prefix=24))
        first = (self.names.pid * 7 + self.names.serial) % len(subnets)
        last_refusal = "no /24 of the rig's block was free"
        for offset in range(len(subnets)):
            candidate = subnets[(first + offset) % len(subnets)]
            if str(candidate) in taken:
                continue
            refusal = subnet_refusal(candidate, routes, addresses)  # type: ignore[arg-type]
            if refusal is None:
                return candidate  # type: ignore[return-value]
            last_refusal = refusal
        raise SetupError(f"the rig found no free /24 in {RIG_BLOCK}: {last_refusal}")

    def _network(self) -> None:
        assert self.subnet is not None
        bridge = self.names.bridge
        run(["ip", "link", "add", bridge, "type", "bridge"])
        _no_ipv6(bridge)
        run(["ip", "addr", "add", f"{self.bridge_address}/24", "dev", bridge])
        run(["ip", "link", "set", bridge, "up"])
        for index in range(1, self.count + 1):
            ns, veth = self.names.netns(index), self.names.veth(index)
            run(["ip", "netns", "add", ns])
            run(["ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns])
            _no_ipv6(veth)
            run(["ip", "link", "set", veth, "master", bridge, "up"])
            run(
                [
                    "ip",
                    "netns",
                    "exec",
                    ns,
                    "sysctl",
                    "-q",
                    "-w",
                    "net.ipv6.conf.all.disable_ipv6=1",
                ]
            )
            run(["ip", "-n", ns, "link", "set", "lo", "up"])
            run(["ip", "-n", ns, "addr", "add", f"{self.address(index)}/24", "dev", "eth0"])
            run(["ip", "-n", ns, "link", "set", "eth0", "up"])
        self._allow_forwarding()

    def _allow_forwarding(self) -> None:
        """Where bridged packets pass through iptables (br_netfilter, as Docker sets it) and
        forwarding is dropped by default, hosts would not reach each other: accept what goes
        from the rig's bridge to itself, and nothing else."""
        knob = Path("/proc/sys/net/bridge/bridge-nf-call-iptables")
        with contextlib.suppress(OSError):
            if knob.read_text().strip() != "1":
                return
        bridge = self.names.bridge
        self.forward_rule = [
            "FORWARD", "-i", bridge, "-o", bridge,
            "-m", "comment", "--comment", f"lab-rig:{self.tag}", "-j", "ACCEPT",
        ]  # fmt: skip
        run(["iptables", "-w", "-I", *self.forward_rule])

    def _check_routes(self) -> None:
        """Fail closed: every host address routes through the bridge, and no namespace has
        a route beyond the rig's /24."""
        assert self.subnet is not None
        for index in range(1, self.count + 1):
            address = self.address(index)
            refusal = route_refusal(address, self.names.bridge, ip_json("route", "get", address))
            if refusal is not None:
                raise SetupError(f"the rig will not start: {refusal}")
            ns = self.names.netns(index)
            for route in ip_json("route", "show", "table", "all", netns=ns):
                dst = str(route.get("dst", ""))
                if route.get("table") in ("local",) or dst in ("", "127.0.0.0/8"):
                    continue
                if dst == "default" or not _inside(dst, self.subnet):
                    raise SetupError(
                        f"the rig will not start: namespace {ns} has a route to {dst} "
                        f"beyond {self.subnet}"
                    )

    def _start_sshd(self, index: int) -> None:
        folder = self.stage / f"h{index}"
        address = self.address(index)
        (folder / "sshd_config").write_text(sshd_config(address), encoding="utf-8")
        (folder / "authorized_keys").write_bytes((self.stage / "id_ed25519.pub").read_bytes())
        script = start_script(folder, hidden())
        (folder / "start.sh").write_text(script, encoding="utf-8")
        command = [
            "ip", "netns", "exec", self.names.netns(index),
            "unshare", "--mount", "--propagation", "private",
            "--pid", "--fork", "--kill-child", "--mount-proc", "sh", str(folder / "start.sh"),
        ]  # fmt: skip
        log = (folder / "sshd.log").open("ab")
        with log:
            proc = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                **popen_options(bool(self.kept)),
            )
        self.sshd.append(proc)
        deadline = time.monotonic() + _SSHD_WAIT_S
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                tail = (folder / "sshd.log").read_text(errors="replace").strip()[-300:]
                raise SetupError(f"host h{index}'s sshd exited ({proc.returncode}): {tail}")
            with contextlib.suppress(OSError), socket.create_connection((address, 22), 0.5):
                return
            time.sleep(0.05)
        raise SetupError(f"host h{index}'s sshd did not answer on {address}:22 in {_SSHD_WAIT_S} s")

    def _hosts_file(self) -> Path:
        key = self.stage / "id_ed25519"
        lines = []
        for index in range(1, self.count + 1):
            public = (self.stage / f"h{index}" / "ssh_host_ed25519_key.pub").read_text().split()
            lines.append(f"{self.address(index)} {public[0]} {public[1]}\n")
        known = self.stage / "known_hosts"
        known.write_text("".join(lines), encoding="utf-8")
        text = [
            f"# The lab's namespace rig {self.tag}: {self.count} hosts on {self.names.bridge}",
            f'rig = "{self.tag}"',
            f'networks = ["{self.subnet}"]',
            'user = "root"',
            f"key = {_toml(str(key))}",
            f"known_hosts = {_toml(str(known))}",
            f'dir = "{HOST_DIR}"',
            "",
        ]
        for index in range(1, self.count + 1):
            text += [
                "[[host]]",
                f'name = "h{index}"',
                f'address = "{self.address(index)}"',
                f'node = "n{index}"',
                "",
            ]
        path = self.stage / "hosts.toml"
        path.write_text("\n".join(text), encoding="utf-8")
        return path

    # -- down -----------------------------------------------------------------------------------

    def down(self) -> list[str]:
        """Stop every sshd and every process in the namespaces, remove the namespaces, veths,
        bridge, forwarding rule, keys and record; the problems, one line each."""
        for proc in self.sshd:
            with contextlib.suppress(OSError):
                proc.send_signal(signal.SIGTERM)
        for proc in self.sshd:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.sshd = []
        record = RIGS.read(self.tag)
        problems = remove_rig(record.body if record is not None else {}, self.tag)
        if record is not None and not problems:
            record.remove()
        return problems


def _no_ipv6(link: str) -> None:
    knob = Path(f"/proc/sys/net/ipv6/conf/{link}/disable_ipv6")
    with contextlib.suppress(OSError):
        knob.write_text("1")


def _inside(dst: str, subnet: ipaddress.IPv4Network) -> bool:
    with contextlib.suppress(ValueError):
        network = ipaddress.ip_network(dst if "/" in dst else f"{dst}/32", strict=False)
        return network.subnet_of(subnet)  # type: ignore[arg-type]
    return False


def _toml(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


class SessionRig:
    """A rig of five hosts made on first use and kept for a test session (`pytest --backend
    ssh --lab-hosts rig`), in a temporary folder of its own."""

    def __init__(self) -> None:
        self._rig: Rig | None = None
        self._file: Path | None = None

    def hosts_file(self) -> Path:
        if self._file is None:
            import tempfile

            self._rig = Rig(5, Path(tempfile.mkdtemp(prefix="lab-session-rig-")))
            self._file = self._rig.up()
        return self._file

    def down(self) -> None:
        if self._rig is not None:
            self._rig.down()
            shutil.rmtree(self._rig.stage.parent, ignore_errors=True)
