"""`lab doctor`: the table of what the lab found on this machine, with and without Docker."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import run_lab

from lab.cli.doctor import table
from lab.cli.doctor_probes import PROBES, Finding, Probe


def _probe(name: str) -> Probe:
    return Probe(name, f"what {name} enables", f"install {name}", lambda: Finding(True, ""))


def test_a_missing_piece_says_what_it_enables_and_how_to_install_it() -> None:
    lines = table((_probe("here"), _probe("gone")), [Finding(True, "1.0"), Finding(False, "no")])
    assert lines[0].split() == ["ok", "here", "1.0"]
    assert lines[1].split()[:3] == ["--", "gone", "no"]
    assert lines[2].strip() == "enables: what gone enables"
    assert lines[3].strip() == "install: install gone"
    assert len(lines) == 4  # a piece that is here gets no install line


def _rows(stdout: str) -> dict[str, dict[str, object]]:
    report = json.loads(stdout)
    return {str(row["piece"]): row for row in report["pieces"]}


def test_the_table_names_every_piece_on_this_machine(tmp_path: Path) -> None:
    done = run_lab("doctor", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr  # the suite's set-up made it ready
    names = [
        line[4:].split("  ")[0] for line in done.stdout.splitlines() if line[:2] in ("ok", "--")
    ]
    assert names == [p.name for p in PROBES]
    assert done.stdout.rstrip().endswith("ready: `lab run` works on local processes")
    as_json = run_lab("doctor", "--json", cwd=tmp_path)
    rows = _rows(as_json.stdout)
    assert rows["Python"]["ok"] is True and rows["Toxiproxy server"]["ok"] is True
    assert all((row["install"] is None) == row["ok"] for row in rows.values())


def _path_without(tmp_path: Path, hidden: tuple[str, ...]) -> str:
    """A PATH with every command of this one but those named `hidden`."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        directory = Path(entry)
        if not directory.is_dir():
            continue
        for command in directory.iterdir():
            link = folder / command.name
            if command.name in hidden or link.exists() or link.is_symlink():
                continue
            if command.is_file() and os.access(command, os.X_OK):
                link.symlink_to(command)
    return str(folder)


def test_without_docker_the_engine_row_says_how_to_get_one(tmp_path: Path) -> None:
    env = {
        "PATH": _path_without(tmp_path, ("docker", "dockerd", "containerd")),
        "DOCKER_HOST": f"unix://{tmp_path / 'no-engine.sock'}",
    }
    done = run_lab("doctor", "--json", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr  # Docker widens the lab; a first run needs none
    engine = _rows(done.stdout)["Docker engine"]
    assert engine["ok"] is False
    assert engine["found"] == "no engine answers and no `dockerd` is installed"
    assert "apt-get install docker.io" in str(engine["install"])
    text = run_lab("doctor", cwd=tmp_path, env=env).stdout
    assert "--  Docker engine" in text and "enables: --backend docker" in text


def test_without_a_checkout_toxiproxy_is_installed_with_go_not_the_bootstrap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import lab.backends.toxiproxy as toxiproxy

    assert "scripts/bootstrap.sh" in toxiproxy.install_hint()  # this checkout has it
    monkeypatch.setattr(toxiproxy, "LAB_ROOT", tmp_path)  # as where pip installed the lab
    hint = toxiproxy.install_hint()
    assert "bootstrap" not in hint
    assert (
        f"go install github.com/Shopify/toxiproxy/v2/cmd/server@{toxiproxy.SERVER_VERSION}" in hint
    )
    bootstrap = (Path(__file__).parent.parent / "scripts" / "bootstrap.sh").read_text()
    assert f'toxiproxy_version="{toxiproxy.SERVER_VERSION}"' in bootstrap  # the same version
