"""Every class of bad input, for every command that reads a user's file: one line on stderr
naming the file (and the line where there is one), exit status 2, no traceback, and nothing
created — no run folder, no Parquet copy, no campaign folder, no failure record.

The classes (tests/bad_inputs.py): binary, invalid UTF-8, NUL bytes, empty, a folder where a
file is expected, a huge file (200 MB without a newline), a long line, a missing file; a file
where a folder is expected; and an unreadable file (a child that file modes stop, as root).
The commands run in-process; the orphan reaper every command runs first is left out (it is
not what is tested here, and another lab's leftovers must not write into the test's folder).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from bad_inputs import KINDS, lab_obeying_file_modes, make_bad
from checker_helpers import drained, got, sent, write_history

from lab.cli.main import main
from lab.ground.errors import InputError
from lab.judge.deviations import load_declarations
from scenarios.catalog import scenario_named

INCIDENT_TOML = b'scenario = "incident"\nseed = 7\n[workload]\nduration_s = 5.0\n'
INCIDENT_JSON = b'{"scenario": "incident",\n "seed": 7}\n'
DEVIATIONS = b'target = "broker_ref"\n[[deviation]]\nid = "D1"\n'


@pytest.fixture(autouse=True)
def _no_reaper(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("lab.cli.orphans.clear_orphans", lambda log=None: [])


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def _refused(
    argv: list[str],
    named: Path,
    root: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> str:
    """Run `lab argv` in `root`; it must refuse in one line naming `named` and create nothing."""
    monkeypatch.chdir(root)
    before = _tree(root)
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith("lab: error: "), err
    assert str(named) in lines[0], f"{named} not named in: {lines[0]}"
    assert _tree(root) == before, "the command created something"
    return lines[0]


def _history(folder: Path) -> bytes:
    folder.mkdir(parents=True, exist_ok=True)
    path = write_history(folder, sent("a") + got("a") + drained("c0"))
    data = path.read_bytes()
    path.unlink()
    return data


@pytest.mark.parametrize("kind", KINDS)
def test_lab_check(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    history = make_bad(kind, tmp_path / "history.jsonl", _history(tmp_path))
    line = _refused(["check", str(history), "--json"], history, tmp_path, capsys, monkeypatch)
    if kind == "invalid-utf8":
        assert f"{history}:2: not UTF-8 text" in line


def test_a_run_folder_with_an_empty_history_is_a_run_stopped_before_its_load(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "history.jsonl").write_bytes(b"")
    assert main(["check", str(tmp_path), "--json"]) == 0  # nothing acknowledged, nothing lost
    assert json.loads(capsys.readouterr().out)["attempted"] == 0


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("name", "good"),
    [("incident.toml", INCIDENT_TOML), ("incident.json", INCIDENT_JSON)],
    ids=["toml", "json"],
)
def test_lab_run_spec(
    kind: str,
    name: str,
    good: bytes,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    incident = make_bad(kind, tmp_path / name, good)
    runs = tmp_path / "runs"
    _refused(
        ["run", "--spec", str(incident), "--runs-dir", str(runs)],
        incident,
        tmp_path,
        capsys,
        monkeypatch,
    )


def test_lab_run_with_a_file_for_its_runs_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    incident = tmp_path / "incident.toml"
    incident.write_bytes(INCIDENT_TOML)
    runs = tmp_path / "runs"
    runs.write_bytes(b"not a folder")
    argv = ["run", "--spec", str(incident), "--runs-dir", str(runs)]
    line = _refused(argv, runs, tmp_path, capsys, monkeypatch)
    assert "a file, not a folder" in line


def _spec_json() -> bytes:
    spec = scenario_named("master-failure").spec(1).to_json()
    return json.dumps(spec, indent=1).encode()


@pytest.mark.parametrize("kind", [*KINDS, "a-file-for-the-folder"])
def test_lab_replay(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "runs" / "master-failure" / "20260101T000000Z-1"
    if kind == "a-file-for-the-folder":
        folder.parent.mkdir(parents=True)
        folder.write_bytes(_spec_json())
        named = folder
    else:
        folder.mkdir(parents=True)
        named = folder if kind == "missing" else make_bad(kind, folder / "spec.json", _spec_json())
    argv = ["replay", str(folder), "--runs-dir", str(tmp_path / "replays")]
    _refused(argv, named, tmp_path, capsys, monkeypatch)


def _failure_record() -> bytes:
    return b'{"v": 1,\n "id": "abc", "scenario": "random"}\n'


@pytest.mark.parametrize(
    "kind", [k for k in KINDS if k != "missing"] + ["not-a-record", "a-file-for-the-folder"]
)
def test_lab_failures(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    failures = tmp_path / "failures"
    if kind == "a-file-for-the-folder":
        failures.write_bytes(_failure_record())
        named = failures
    elif kind == "not-a-record":
        failures.mkdir()
        named = failures / "random-abc.json"
        named.write_bytes(_failure_record())
    else:
        failures.mkdir()
        named = make_bad(kind, failures / "random-abc.json", _failure_record())
    line = _refused(
        ["failures", "list", "--failures-dir", str(failures)], named, tmp_path, capsys, monkeypatch
    )
    if kind == "not-a-record":
        assert "not a failure record: 'target' is missing" in line


@pytest.mark.parametrize(
    "kind", [*KINDS, "a-file-for-the-folder", "a-run-folder-gone", "not-a-record"]
)
def test_lab_campaign_merge(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    campaign = tmp_path / "shard1"
    good = b'{"v": 1,\n "runs": []}\n'
    if kind == "a-file-for-the-folder":
        campaign.write_bytes(good)
        named = campaign
    elif kind == "a-run-folder-gone":
        campaign.mkdir()
        record = {"number": 1, "kind": "fresh", "scenario": "random", "target": "broker_ref"}
        record |= {"backend": "process", "mode": "replicated-group", "seed": 1, "verdict": "held"}
        record |= {"violations": [], "seconds": 1.0, "folder": "runs/random/20260101T000000Z-1"}
        (campaign / "campaign.json").write_text(json.dumps({"v": 1, "runs": [record]}))
        named = campaign / "runs" / "random" / "20260101T000000Z-1"
    elif kind == "not-a-record":
        campaign.mkdir()
        named = campaign / "campaign.json"
        named.write_text('{"v": 1, "runs": [{"number": 1}]}')
    else:
        campaign.mkdir()
        named = make_bad(kind, campaign / "campaign.json", good)
    argv = ["campaign", "merge", str(campaign), "--out", str(tmp_path / "night"), "--no-report"]
    line = _refused(argv, named, tmp_path, capsys, monkeypatch)
    if kind == "not-a-record":
        assert "run record 1 is not one: missing 9 required positional arguments: 'kind'" in line


@pytest.mark.parametrize("kind", KINDS)
def test_a_targets_deviations_file(kind: str, tmp_path: Path) -> None:
    path = make_bad(kind, tmp_path / "deviations.toml", DEVIATIONS)
    with pytest.raises(InputError) as raised:
        load_declarations(path)
    line = str(raised.value)
    assert "\n" not in line and line.startswith(str(path)), line


def test_a_huge_history_line_is_refused_without_reading_it_whole(tmp_path: Path) -> None:
    """200 MB of text without a newline: refused, and the command's peak memory stays far
    below the line's size (it reads the file's last MiB and counts lines in MiB blocks)."""
    history = tmp_path / "history.jsonl"
    with history.open("wb") as out:
        out.write(b'{"index": 0, "value": "')
        block = b"x" * (1 << 20)
        for _ in range(200):
            out.write(block)
    code, error, peak_mb = _peak_memory_of_check(history)
    assert code == 2 and "history.jsonl:1: a line longer than 1 MiB" in error, error
    assert peak_mb < 150, f"peak memory {peak_mb:.0f} MB"


_PEAK = """
import io, json, sys, contextlib
from pathlib import Path
import lab.cli.orphans
lab.cli.orphans.clear_orphans = lambda log=None: []
from lab.cli.main import main
err = io.StringIO()
with contextlib.redirect_stderr(err):
    code = main(["check", sys.argv[1]])
status = Path("/proc/self/status").read_text().splitlines()
peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 1024
print(json.dumps({"code": code, "error": err.getvalue(), "vm_hwm_mb": peak}))
"""


def _peak_memory_of_check(history: Path) -> tuple[int, str, float]:
    done = subprocess.run(
        [sys.executable, "-c", _PEAK, str(history)],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    found = json.loads(done.stdout.strip().splitlines()[-1])
    return int(found["code"]), str(found["error"]), float(found["vm_hwm_mb"])


def test_unreadable_files_are_named_by_every_command(tmp_path: Path) -> None:
    root = tmp_path / "inputs"
    root.mkdir()
    history = root / "history.jsonl"
    history.write_bytes(_history(root / "h"))
    incident = root / "incident.toml"
    incident.write_bytes(INCIDENT_TOML)
    run = root / "run"
    run.mkdir()
    (run / "spec.json").write_bytes(_spec_json())
    failures = root / "failures"
    failures.mkdir()
    (failures / "random-abc.json").write_bytes(_failure_record())
    campaign = root / "shard1"
    campaign.mkdir()
    (campaign / "campaign.json").write_bytes(b'{"v": 1, "runs": []}')
    secrets = [history, incident, run / "spec.json", failures / "random-abc.json"]
    secrets.append(campaign / "campaign.json")
    for path in secrets:
        path.chmod(0)
    commands: list[list[str]] = [
        ["check", str(history)],
        ["run", "--spec", str(incident), "--runs-dir", str(root / "runs")],
        ["replay", str(run), "--runs-dir", str(root / "replays")],
        ["failures", "list", "--failures-dir", str(failures)],
        ["campaign", "merge", str(campaign), "--out", str(root / "night"), "--no-report"],
    ]
    before = _tree(root)
    said = lab_obeying_file_modes(commands, cwd=root)
    for path, (code, err) in zip(secrets, said, strict=True):
        lines = [line for line in err.splitlines() if line.strip() and "cleared" not in line]
        assert code == 2 and len(lines) == 1, err
        assert f"{path}: cannot read the " in lines[0] and "permission denied" in lines[0], err
    assert _tree(root) - before <= {".lab", ".lab/orphans.log"}
