"""`lab rig up` / `lab rig down`: the namespace rig kept between commands for a person trying
`--backend ssh` on one machine. Its arguments and refusals (fast), and a real rig brought up,
found again, reached over SSH through its hosts file, left alone by other `lab` commands,
made anew when broken, and taken down leaving nothing."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest
from conftest import run_lab
from hosts_helpers import links, netns_names, on_host, skip_without_rig

from lab.backends.ssh import rig_kept
from lab.backends.ssh.hosts_file import read_hosts_file
from lab.backends.ssh.rig import RIGS
from lab.cli.main import main


def _error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.startswith("lab: error:")]
    assert len(lines) == 1, stderr
    return lines[0]


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (("rig", "up", "--hosts", "0"), "--hosts 0: a rig has 1 to 9 hosts"),
        (("rig", "up", "--hosts", "10"), "--hosts 10: a rig has 1 to 9 hosts"),
        (("rig", "down", "--hosts", "3"), "--hosts is for `lab rig up`"),
        (("rig", "sideways"), "invalid choice: 'sideways'"),
    ],
)
def test_lab_rig_refuses_bad_arguments_in_one_line(
    argv: tuple[str, ...], says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _status([*argv, "--state-dir", str(tmp_path / "state")]) == 2
    assert says in _error_line(capsys.readouterr().err)
    assert not (tmp_path / "state").exists()  # nothing made


def _status(argv: list[str]) -> int:
    """`lab ARGV`'s exit status (argparse's refusals exit from inside `main`)."""
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


@pytest.mark.parametrize("action", ["up", "down"])
def test_lab_rig_without_root_is_refused_in_one_line(
    action: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What a user who is not root sees (faked here only where the suite runs as root)."""
    if os.geteuid() == 0:
        refusal = "the namespace rig needs root (network and mount namespaces, a bridge)"
        monkeypatch.setattr(rig_kept, "rig_refusal", lambda: refusal)
    assert _status(["rig", action, "--state-dir", str(tmp_path / "state")]) == 2
    line = _error_line(capsys.readouterr().err)
    assert line.startswith(f"lab: error: lab rig {action}: the namespace rig needs root")
    assert line.endswith(": run it as root")
    assert not (tmp_path / "state").exists()


def _lab(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    done = run_lab(*args, cwd=cwd)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def _made_by(tag: str) -> set[str]:
    """The namespaces and links on this machine named after rig `tag` (`<pid>.0`)."""
    pid, serial = tag.split(".")
    names = {n for n in netns_names() if n.startswith(f"lab-rig-{tag}-")}
    return names | {n for n in links() if n.startswith(f"lr{int(pid):x}g{serial}")}


@pytest.mark.hosts
def test_a_kept_rig_comes_up_once_serves_ssh_and_goes_leaving_nothing(tmp_path: Path) -> None:
    skip_without_rig()
    state = tmp_path / "state"
    up = _lab("rig", "up", "--hosts", "2", "--state-dir", str(state), cwd=tmp_path)
    hosts_file = Path(up.stdout.strip())
    inventory = read_hosts_file(hosts_file)
    tag = str(inventory.rig)
    made = _made_by(tag)
    try:
        assert len(made) == 5  # two namespaces, the bridge, two veths
        assert "2 hosts made" in up.stderr
        again = _lab("rig", "up", "--state-dir", str(state), cwd=tmp_path)
        assert Path(again.stdout.strip()) == hosts_file and "2 hosts already up" in again.stderr
        refused = run_lab("rig", "up", "--hosts", "3", "--state-dir", str(state), cwd=tmp_path)
        assert refused.returncode == 2
        assert "a rig of 2 hosts is up" in _error_line(refused.stderr)
        _lab("list", cwd=tmp_path)  # every command's reaper leaves a kept rig alone
        assert _made_by(tag) == made
        for node in ("n1", "n2"):  # the hosts file reaches each host over SSH
            assert on_host(inventory, node, "echo here; ls /srv/lab | wc -l").split() == [
                "here",
                "0",
            ]

        # A rig whose sshd died is not whole: `up` makes it anew, on the same names.
        netns = sorted(n for n in made if n.startswith("lab-rig-"))
        pids = subprocess.run(
            ["ip", "netns", "pids", netns[0]], capture_output=True, text=True, check=True
        ).stdout.split()
        for pid in pids:
            os.kill(int(pid), signal.SIGKILL)
        anew = _lab("rig", "up", "--state-dir", str(state), cwd=tmp_path)
        assert "is not whole" in anew.stderr and "2 hosts made" in anew.stderr
        hosts_file = Path(anew.stdout.strip())
        tag = str(read_hosts_file(hosts_file).rig)
        assert on_host(read_hosts_file(hosts_file), "n1", "echo again").strip() == "again"
    finally:
        down = _lab("rig", "down", "--state-dir", str(state), cwd=tmp_path)
    assert f"rig {tag} taken down" in down.stderr
    assert not _made_by(tag)
    assert RIGS.read(tag) is None
    assert not state.exists()  # its keys, hosts file and folder too
    again = _lab("rig", "down", "--state-dir", str(state), cwd=tmp_path)
    assert "no rig is up" in again.stderr
