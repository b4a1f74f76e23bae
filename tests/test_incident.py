"""Hand-written incidents (`lab run --spec FILE`) and edited spec.json files: read, checked
field by field before anything starts, run, and reproduced by `lab replay`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_lab

from lab.ground.errors import InputError
from lab.ground.invocation import shown_command
from lab.run.incident import load_incident
from scenarios.catalog import scenario_named

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "incidents" / "slow-link-then-master-crash.toml"

BASE = """
seed = 3
[topology]
nodes = 3
[workload]
duration_s = 12.0
"""


def _write(tmp_path: Path, text: str, name: str = "incident.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_the_example_incident_reads_as_its_windows_say() -> None:
    spec = load_incident(EXAMPLE)
    assert spec.scenario == "incident" and spec.seed == 1
    assert spec.durability.triplet == "NO_SYNC,NO_SYNC,SIMPLE_MAJORITY"
    by_id = {(op.id, op.action): op for op in spec.schedule}
    assert by_id[("crash", "start")].at_s == 5.0 and by_id[("crash", "stop")].at_s == 7.5
    assert by_id[("slow", "start")].params == {"latency_ms": 200, "jitter_ms": 50}
    assert [op.at_s for op in spec.schedule] == sorted(op.at_s for op in spec.schedule)


def test_windows_operations_and_json_give_one_spec(tmp_path: Path) -> None:
    windows = _write(
        tmp_path,
        BASE + '[[fault]]\nfault = "kill"\ntarget = "n1"\nstart_s = 2.0\nend_s = 4.0\n',
    )
    operations = _write(
        tmp_path,
        BASE
        + '[[schedule]]\nid = "f1"\nat_s = 2.0\naction = "start"\nfault = "kill"\ntarget = "n1"\n'
        + '[[schedule]]\nid = "f1"\nat_s = 4.0\naction = "stop"\nfault = "kill"\ntarget = "n1"\n',
        "ops.toml",
    )
    as_json = _write(tmp_path, json.dumps(load_incident(windows).to_json()), "spec.json")
    assert load_incident(windows) == load_incident(operations)
    assert load_incident(as_json).schedule == load_incident(windows).schedule


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("TOP:colour = 'red'\n", "colour: unknown setting"),
        ("[group]\nspeed = 3\n", "group.speed: unknown setting"),
        ("[durability]\ntriplet = 'NO_SYNC,NO_SYNC'\n", "bad durability"),
        ("[durability]\ntriplet = 'SYNC,SYNC,ALL'\n", "cannot be used"),
        ("[group]\nactive_passive = { poll = 1 }\n", "group.active_passive.poll"),
        ("TOP:mode = 'hot-standby'\n", "unknown mode"),
        ("TOP:seed = -1\n", "bad seed"),
        ("[[fault]]\nfault = 'kill'\nstart_s = 1.0\n", "fault[1].target: missing"),
        ("[[fault]]\nfault = 'kil'\ntarget = 'n1'\nstart_s = 1.0\n", "unknown fault 'kil'"),
        ("[[fault]]\nfault = 'kill'\ntarget = 'n9'\nstart_s = 1.0\n", "unknown node 'n9'"),
        ("[[fault]]\nfault = 'kill'\ntarget = '@leader'\nstart_s = 1.0\n", "bad role '@leader'"),
        ("[[fault]]\nfault = 'kill'\ntarget = 'n1'\nstart_s = -1.0\n", "cannot be negative"),
        ("[[fault]]\nfault = 'kill'\ntarget = 'n1'\nstart_s = 'soon'\n", "fault[1].start_s"),
        ("[[fault]]\nfault = 'kill'\ntarget = 'n1'\nstart_s = 30.0\n", "after the load ends"),
        (
            "[[fault]]\nfault = 'kill'\ntarget = 'n1'\nstart_s = 5.0\nend_s = 4.0\n",
            "fault[1].end_s: the heal (4 s) is before the fault (5 s)",
        ),
        (
            "[[schedule]]\nid = 'f1'\nat_s = 1.0\naction = 'stop'\nfault = 'kill'\ntarget = 'n1'\n",
            "a heal before its fault",
        ),
        ("[[fault]]\nfault = 'cut'\ntarget = 'n1_n2'\nstart_s = 1.0\n", "is not a link"),
        (
            "[[fault]]\nfault = 'cut'\ntarget = 'client_to_n1'\nstart_s = 1.0\nend_s = 5.0\n"
            "[[fault]]\nfault = 'latency'\ntarget = 'client_to_n1'\nstart_s = 3.0\nend_s = 6.0\n",
            "overlaps fault f1 on the same link",
        ),
        (
            "[[fault]]\nfault = 'partition'\ntarget = 'group'\nstart_s = 1.0\n"
            "params = { sides = 'n1|n4' }\n",
            "params.sides: unknown node 'n4'",
        ),
        ("[[fault]]\nfault = 'kill'\ntarget = 'manager'\nstart_s = 1.0\n", "cluster manager"),
        ("[[fault]]\nfault = 'kill'\ntarget = 'n1'\nstart_s = 1.0\n[[schedule]]\n", "not both"),
        ("nodes = [\n", "not valid TOML"),
    ],
)
def test_each_problem_names_the_file_and_the_field(tmp_path: Path, text: str, says: str) -> None:
    if text.startswith("TOP:"):  # top-level settings come before the tables
        text = text.removeprefix("TOP:")
        path = _write(tmp_path, text + BASE.replace("seed = 3\n", ""))
    else:
        path = _write(tmp_path, BASE + text)
    with pytest.raises(InputError) as raised:
        load_incident(path)
    message = str(raised.value)
    assert message.startswith(f"{path}: ") and "\n" not in message
    assert says in message


def test_the_cli_refuses_a_bad_incident_before_anything_starts(tmp_path: Path) -> None:
    bad = _write(tmp_path, BASE + "[[fault]]\nfault = 'kill'\ntarget = 'n7'\nstart_s = 1.0\n")
    result = run_lab("run", "--spec", str(bad), cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "unknown node 'n7'" in result.stderr
    assert not (tmp_path / "runs").exists()
    mixed = run_lab("run", "--spec", str(EXAMPLE), "--seed", "4", cwd=tmp_path)
    assert mixed.returncode == 2 and "--seed: an incident file gives its own" in mixed.stderr
    alone = run_lab("run", "incident", cwd=tmp_path)
    assert alone.returncode == 2 and "lab run --spec FILE" in alone.stderr
    missing = run_lab("run", "--spec", str(tmp_path / "nope.toml"), cwd=tmp_path)
    assert missing.returncode == 2 and "cannot read the incident file" in missing.stderr


def test_an_edited_spec_json_is_checked_before_a_replay(tmp_path: Path) -> None:
    folder = tmp_path / "runs" / "master-failure" / "20260101T000000Z-5"
    folder.mkdir(parents=True)
    raw = scenario_named("master-failure").spec(5).to_json()
    raw["schedule"][0]["target"] = "n12"
    (folder / "spec.json").write_text(json.dumps(raw), encoding="utf-8")
    result = run_lab("replay", str(folder), cwd=tmp_path)
    assert result.returncode == 2
    assert "spec.json" in result.stderr and "unknown node 'n12'" in result.stderr
    assert [p.name for p in folder.parent.iterdir()] == [folder.name]


@pytest.mark.processes
def test_the_example_incident_runs_and_is_reproduced_by_replay(tmp_path: Path) -> None:
    result = run_lab("run", "--spec", str(EXAMPLE), cwd=tmp_path, timeout=180)
    assert result.returncode == 0, result.stdout + result.stderr
    printed = result.stdout.splitlines()[0]
    folder = tmp_path / printed
    outcome = json.loads((folder / "result.json").read_text())
    assert outcome["verdict"] == "held" and outcome["check"]["acknowledged"] > 0
    # The lab that ran it (this environment's), and the folder wherever the line is read.
    assert outcome["reproduce"] == f"{shown_command('lab')} replay {folder}"
    applied = [
        json.loads(line)
        for line in (folder / "schedule.jsonl").read_text().splitlines()
        if '"applied"' in line
    ]
    assert {(e["id"], e["action"]) for e in applied if e["ok"]} == {
        ("slow", "start"),
        ("slow", "stop"),
        ("crash", "start"),
        ("crash", "stop"),
    }
    assert json.loads((folder / "spec.json").read_text()) == load_incident(EXAMPLE).to_json() | {
        "git_revision": json.loads((folder / "spec.json").read_text())["git_revision"]
    }
