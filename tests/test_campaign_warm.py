"""A campaign's `lab` commands forked from the warm interpreter behave as `python -m lab`:
the same output in the same files, the same exit status, signals delivered."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
from pathlib import Path

from lab import __version__
from lab.campaign.warm import start_lab, wait_any, warm_up
from lab.ground.paths import LAB_ROOT


def test_a_forked_command_writes_its_output_and_exit_status(tmp_path: Path) -> None:
    warm_up()
    out, err = tmp_path / "out", tmp_path / "err"
    proc = start_lab(["--version"], out, err)
    wait_any([proc], 60)
    assert proc.poll() == 0  # wait_any returned because it ended, not on its timeout
    assert out.read_text().strip() == f"lab {__version__}"


def test_bad_usage_is_the_same_one_line_and_status_2_as_a_fresh_lab(tmp_path: Path) -> None:
    argv = ["run", "no-such-scenario", "--runs-dir", str(tmp_path / "runs")]
    proc = start_lab(argv, tmp_path / "out", tmp_path / "err")
    assert proc.wait() == 2
    fresh = subprocess.run(
        [sys.executable, "-m", "lab", *argv], cwd=LAB_ROOT, capture_output=True, text=True
    )
    assert fresh.returncode == 2
    assert (tmp_path / "err").read_text() == fresh.stderr
    assert not (tmp_path / "runs").exists()


def _silent_cluster(tmp_path: Path) -> tuple[socket.socket, list[str]]:
    """A `lab up` state whose 200 brokers never answer (one socket that takes connections
    and says nothing): `lab ha status --all` asks each in turn, 5 s apiece — a command that
    waits until it is stopped, and costs nothing while it waits."""
    listener = socket.create_server(("127.0.0.1", 0), backlog=512)
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    state = tmp_path / "state"
    state.mkdir()
    nodes = [{"name": f"n{number}", "management": url} for number in range(200)]
    (state / "cluster.json").write_text(json.dumps({"nodes": nodes}), encoding="utf-8")
    return listener, ["ha", "--state-dir", str(state), "status", "--all"]


def test_ctrl_c_and_kill_reach_the_forked_command(tmp_path: Path) -> None:
    listener, waits = _silent_cluster(tmp_path)
    with listener:
        proc = start_lab(waits, tmp_path / "out", tmp_path / "err")
        listener.settimeout(120)
        asked, _ = listener.accept()  # the command is in its work, waiting for an answer
        asked.close()
        assert proc.poll() is None
        proc.send_signal(signal.SIGINT)  # as Ctrl-C: `lab`'s own interrupted exit
        assert proc.wait() == 130
        assert "lab: interrupted" in (tmp_path / "err").read_text()
        proc.kill()  # an ended process: nothing to do, no error

        again = start_lab(waits, tmp_path / "out2", tmp_path / "err2")
        again.kill()
        assert again.wait() == -signal.SIGKILL
