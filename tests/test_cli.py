"""The errors a user meets: one clear line and exit status 2, nothing left behind."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_lab


def _one_line_error(result: object) -> str:
    err = result.stderr.strip().splitlines()  # type: ignore[attr-defined]
    assert len(err) == 1, result.stderr  # type: ignore[attr-defined]
    assert err[0].startswith("lab: error: ")
    return err[0]


def test_unknown_scenario(tmp_path: Path) -> None:
    result = run_lab("run", "no-such-thing", cwd=tmp_path)
    assert result.returncode == 2
    assert "unknown scenario 'no-such-thing'" in _one_line_error(result)
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("seed", ["abc", "-3", "1e3"])
def test_bad_seed(tmp_path: Path, seed: str) -> None:
    result = run_lab("run", "single-node-crash", "--seed", seed, cwd=tmp_path)
    assert result.returncode == 2
    assert "bad seed" in _one_line_error(result)
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(
    "argv",
    [
        ("run", "single-node-crash", "--target", "no-such-broker"),
        ("images", "build", "--target", "no-such-broker"),
        ("bench", "failover", "--target", "no-such-broker"),
        ("bench", "checker", "--target", "qpid-broker-j"),
    ],
)
def test_an_unknown_or_unsupported_target_is_one_line(
    tmp_path: Path, argv: tuple[str, ...]
) -> None:
    result = run_lab(*argv, cwd=tmp_path)
    assert result.returncode == 2
    line = _one_line_error(result)
    assert "no-such-broker" in line or "measures broker_ref only" in line
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (("bench", "failover", "--mode", "no-such-mode"), "unknown mode"),
        (("bench", "checker", "--mode", "active-passive"), "the replicated group only"),
        (("bench", "failover", "--mode", "active-passive", "--backend", "docker"), "processes"),
    ],
)
def test_a_benchmark_mode_it_cannot_measure_is_one_line(
    tmp_path: Path, argv: tuple[str, ...], says: str
) -> None:
    result = run_lab(*argv, cwd=tmp_path)
    assert result.returncode == 2
    assert says in _one_line_error(result)


def test_unknown_option_is_one_line(tmp_path: Path) -> None:
    result = run_lab("run", "single-node-crash", "--bogus", cwd=tmp_path)
    assert result.returncode == 2
    _one_line_error(result)


def test_unreadable_history(tmp_path: Path) -> None:
    history = tmp_path / "history.jsonl"
    good = {"index": 0, "time": 1, "process": "p1", "type": "invoke", "f": "send", "value": "a"}
    history.write_text(json.dumps(good) + '\nnot json\n{"index": 2}\n')
    result = run_lab("check", str(history), cwd=tmp_path)
    assert result.returncode == 2
    line = _one_line_error(result)
    assert "history.jsonl:2" in line


def test_missing_history(tmp_path: Path) -> None:
    result = run_lab("check", str(tmp_path / "nope.jsonl"), cwd=tmp_path)
    assert result.returncode == 2
    assert "nope.jsonl" in _one_line_error(result)


def test_check_exit_codes_and_json(tmp_path: Path) -> None:
    ops = [
        {"time": 1, "process": "p1", "type": "invoke", "f": "send", "value": "m1"},
        {"time": 2, "process": "p1", "type": "ok", "f": "send", "value": "m1"},
        {"time": 3, "process": "c1", "type": "invoke", "f": "drain", "value": None},
        {"time": 4, "process": "c1", "type": "ok", "f": "drain", "value": None},
    ]
    history = tmp_path / "history.jsonl"
    history.write_text("".join(json.dumps({"index": i, **op}) + "\n" for i, op in enumerate(ops)))
    result = run_lab("check", str(history), "--json", cwd=tmp_path)
    assert result.returncode == 1
    body = json.loads(result.stdout)
    assert body["valid"] is False and body["lost"] == {"count": 1, "ids": ["m1"]}
    received = {"index": 4, "time": 5, "process": "c1", "type": "ok", "f": "receive", "value": "m1"}
    with history.open("a") as f:
        f.write(json.dumps(received) + "\n")
    assert run_lab("check", str(history), cwd=tmp_path).returncode == 0


def test_list_names_the_scenarios(tmp_path: Path) -> None:
    result = run_lab("list", cwd=tmp_path)
    assert result.returncode == 0
    assert "single-node-crash" in result.stdout


def test_bench_lists_benchmarks(tmp_path: Path) -> None:
    result = run_lab("bench", cwd=tmp_path)
    assert result.returncode == 0
    names = {line.split()[0] for line in result.stdout.splitlines()}
    assert {"checker", "startup", "throughput"} <= names


def test_unknown_benchmark(tmp_path: Path) -> None:
    result = run_lab("bench", "nope", cwd=tmp_path)
    assert result.returncode == 2
    assert "unknown benchmark" in _one_line_error(result)


def test_replay_of_a_folder_that_is_not_a_run(tmp_path: Path) -> None:
    result = run_lab("replay", str(tmp_path), cwd=tmp_path)
    assert result.returncode == 2
    assert "not a run folder" in _one_line_error(result)


def test_missing_toxiproxy(tmp_path: Path) -> None:
    """With no toxiproxy-server anywhere, `lab up` says so and starts nothing."""
    fake_prefix = tmp_path / "prefix"
    (fake_prefix / "bin").mkdir(parents=True)
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    # The lab looks on PATH and in sys.prefix/bin: point both where there is none.
    code = f"import sys; sys.prefix = {str(fake_prefix)!r}; from lab.cli.main import main; "
    code += "sys.exit(main(['up']))"
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert "toxiproxy-server not found" in _one_line_error(result)
    assert not (tmp_path / ".lab" / "cluster.json").exists()


@pytest.mark.processes
def test_port_clash(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_lab("up", "--toxiproxy-port", str(port), cwd=tmp_path)
    assert result.returncode == 2
    assert f"port {port}" in _one_line_error(result)
    assert not (tmp_path / ".lab" / "cluster.json").exists()
