"""broker_ref's config and operational log, and the node process's start, restart and exit."""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from broker_helpers import OPLOG_LINE, REPO, NodeFactory, _free_port, _Lines, _receive_all, _send
from proton.utils import BlockingConnection

from broker_ref.config import NodeConfig, load_config, parse_config
from broker_ref.errors import ConfigError
from broker_ref.oplog import Code, OperationalLog, format_line
from broker_ref.roles import Role, RoleTracker

# ---- unit tests: config and operational log -------------------------------------------------


def test_config_defaults_and_relative_data_dir(tmp_path: Path) -> None:
    path = tmp_path / "n1.json"
    path.write_text(
        json.dumps({"name": "n1", "amqp_port": 5672, "management_port": 8080, "data_dir": "d"})
    )
    assert load_config(path) == NodeConfig(
        name="n1",
        amqp_port=5672,
        management_port=8080,
        data_dir=tmp_path / "d",
        group="lab",
        host="127.0.0.1",
        coalescing_sync=True,
        idle_timeout_s=2.0,
        permitted_nodes=("n1",),
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"colour": "red"}, "unknown key 'colour'"),
        ({"name": None}, "'name' must be a non-empty string"),
        ({"name": "two words"}, "no spaces"),
        ({"amqp_port": "5672"}, "'amqp_port' must be a port number"),
        ({"management_port": 70000}, "'management_port' must be a port number"),
        ({"coalescing_sync": 1}, "'coalescing_sync' must be true or false"),
        ({"idle_timeout_s": -1}, "'idle_timeout_s' must be a number"),
        ({"management_port": 5672}, "are both 5672"),
    ],
)
def test_config_errors_name_the_key(change: dict[str, Any], message: str) -> None:
    raw = {"name": "n1", "amqp_port": 5672, "management_port": 8080, "data_dir": "/d"} | change
    with pytest.raises(ConfigError, match=re.escape(message)):
        parse_config(raw)


def test_config_requires_its_four_keys() -> None:
    with pytest.raises(ConfigError, match="missing required key 'data_dir'"):
        parse_config({"name": "n1", "amqp_port": 1, "management_port": 2})


def test_oplog_lines_match_the_labs_pattern() -> None:
    out = _Lines()
    when = datetime(2026, 11, 21, 16, 0, 0, 123456, tzinfo=UTC)
    log = OperationalLog("n1", out, clock=lambda: when)  # type: ignore[arg-type]
    RoleTracker("n1", log).change(Role.MASTER)
    log.warn(Code.LOG_TAIL_TRUNCATED, "two\nlines")
    lines = out.text.splitlines()
    assert lines == [
        "2026-11-21T16:00:00.123Z INFO [n1] HA-1010 : Role change reported: Node : 'n1'"
        " : from 'WAITING' to 'MASTER'",
        "2026-11-21T16:00:00.123Z WARN [n1] REF-1001 : two lines",
    ]
    assert all(OPLOG_LINE.match(line) for line in lines)
    assert OPLOG_LINE.match(format_line(when, "INFO", "n1", "MST-1001", "Created"))


# ---- integration: the node process starting, restarting and exiting -------------------------


@pytest.mark.processes
def test_restart_after_sigkill_recovers_every_accepted_message(start_node: NodeFactory) -> None:
    node = start_node()
    ids = [f"m{i}" for i in range(50)]
    assert _send(node.url, "q", ids) == ["ACCEPTED"] * 50
    connection = BlockingConnection(node.url, timeout=10)
    receiver = connection.create_receiver("q", credit=10)
    for _ in range(10):
        receiver.receive(timeout=5)
        receiver.accept()
    connection.close()
    # 50 enqueues, 10 dequeues and the queue's declaration in the log before the kill
    deadline = time.monotonic() + 60
    while node.get("/api/latest/virtualhostnode/n1")[1]["lastKnownReplicationTransactionId"] < 61:
        assert time.monotonic() < deadline, "the accepts never reached the log"
        time.sleep(0.05)
    node.stop(signal.SIGKILL)
    node.start()
    node.wait_ready()
    assert ("INFO", "MST-1005", "Recovered 40 messages") in node.oplog()
    assert node.get("/api/latest/virtualhostnode/n1")[1]["lastKnownReplicationTransactionId"] == 61
    assert [m.id for m in _receive_all(node.url, "q")] == ids[10:]


@pytest.mark.processes
def test_operational_log_tells_the_startup_and_the_clean_shutdown(
    start_node: NodeFactory,
) -> None:
    node = start_node()
    idle_client = BlockingConnection(node.url, timeout=10)
    assert node.stop(signal.SIGTERM) == 0
    codes = [code for _, code, _ in node.oplog()]
    assert codes[:9] == [
        "MST-1001",
        "MST-1002",
        "MST-1004",
        "MST-1005",
        "BRK-1002",
        "BRK-1004",
        "REF-1007",
        "MST-1006",
        "HA-1010",
    ]
    assert codes[-2:] == ["MST-1003", "BRK-1005"]
    role_change = "Role change reported: Node : 'n1' : from 'WAITING' to 'MASTER'"
    assert ("INFO", "HA-1010", role_change) in node.oplog()
    del idle_client


@pytest.mark.processes
def test_torn_log_tail_is_cut_and_every_message_kept(start_node: NodeFactory) -> None:
    node = start_node()
    ids = [f"m{i}" for i in range(5)]
    _send(node.url, "q", ids)
    node.stop(signal.SIGKILL)
    with open(node.log_path, "ab") as log:
        log.write(b"\x00\x00\x01\x00torn write of a record that never finished")
    node.start()
    node.wait_ready()
    warnings = [text for level, code, text in node.oplog() if code == "REF-1001"]
    assert len(warnings) == 1 and warnings[0].startswith("Log tail truncated : 46 bytes at")
    assert ("WARN", "REF-1001", warnings[0]) in node.oplog()
    assert [m.id for m in _receive_all(node.url, "q")] == ids


def _run_to_exit(args: list[str], timeout_s: float = 15.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "broker_ref", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=timeout_s,
    )


@pytest.mark.processes
@pytest.mark.parametrize(
    ("config", "message"),
    [
        ('{"name": "n1", "amqp_port": 1, "management_port": 2, "data_dir": "d", "x": 1}', "'x'"),
        ('{"amqp_port": 1, "management_port": 2, "data_dir": "d"}', "'name'"),
        ("{not json", "not JSON"),
    ],
    ids=["unknown-key", "missing-key", "not-json"],
)
def test_bad_config_exits_2_with_one_line(tmp_path: Path, config: str, message: str) -> None:
    path = tmp_path / "config.json"
    path.write_text(config)
    result = _run_to_exit(["--config", str(path)])
    assert result.returncode == 2
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1 and message in result.stderr


@pytest.mark.processes
def test_a_missing_config_argument_exits_2_with_one_line() -> None:
    result = _run_to_exit([])
    assert result.returncode == 2 and len(result.stderr.splitlines()) == 1


@pytest.mark.processes
def test_port_in_use_exits_2_with_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        path = tmp_path / "config.json"
        config = {
            "name": "n1",
            "amqp_port": port,
            "management_port": _free_port(),
            "data_dir": str(tmp_path / "d"),
        }
        path.write_text(json.dumps(config))
        result = _run_to_exit(["--config", str(path)])
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        f"broker_ref: cannot listen on 127.0.0.1:{port} (amqp): Address already in use"
    ]
