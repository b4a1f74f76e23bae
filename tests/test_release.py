"""The lab as a release a project pins: a version (lab.__version__) and its tag v<version>,
named alike wherever the docs and the example pin the lab; a wheel and an sdist built by the
standard build backend (PyPA build on setuptools) that twine passes; and the documented
install line, tried from a fresh virtual environment in a folder of its own (a clone of
this repository at the tag stands in for the lab's repository), where the installed lab runs
a failing incident and prints a `reproduce:` line that works from yet another folder.

Wheels come from the machine's wheelhouse (tests/example_venv.py): pip reaches its index
once per machine, then installs without a network.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from conftest import ROOT
from example_venv import wheelhouse

from lab import __version__
from lab.backends.toxiproxy import find_server_binary
from lab.ground.errors import SetupError
from lab.pytest_plugin import skip_unless_ci

TAG = f"v{__version__}"
PINNED = re.compile(
    r"(?:ha-chaos-lab(?:\.git)?@|chaos-nightly\.yml@|releases/download/)(v[0-9][0-9.]*[0-9])"
)


def _repository() -> str:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return str(project["urls"]["Repository"])


def test_the_version_is_the_labs_and_every_pin_names_its_tag() -> None:
    raw = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert raw["project"]["dynamic"] == ["version"]
    assert raw["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "lab.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+", __version__), __version__
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    pages.append(ROOT / "examples" / ".github" / "workflows" / "nightly.yml")
    pins = {
        (p.relative_to(ROOT).as_posix(), t) for p in pages for t in PINNED.findall(p.read_text())
    }
    assert {t for _, t in pins} == {TAG}, sorted(pins)
    pinned_pages = {page for page, _ in pins}
    assert {"docs/library.md", "docs/campaigns.md"} <= pinned_pages


def _install_lines() -> list[str]:
    """The install lines docs/library.md gives for a project's environment."""
    page = (ROOT / "docs" / "library.md").read_text(encoding="utf-8")
    return re.findall(r"^\S*pip install (\".*? @ git\+\S+\"(?: \S+)*)$", page, re.MULTILINE)


def _pip(python: Path, *args: str, cwd: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", "--python", str(python),
         *args],
        cwd=cwd, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]


def _build(tmp_path: Path) -> tuple[Path, Path]:
    """The wheel and sdist of the tracked tree, built in a copy (nothing left in ours)."""
    house = wheelhouse(tmp_path)
    tree = tmp_path / "tree"
    files = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.split(b"\0")
    for name in filter(None, (f.decode() for f in files)):
        if (ROOT / name).is_file():
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, tree / name)
    env = {**os.environ, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(house)}
    done = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(tmp_path / "dist"), str(tree)],
        capture_output=True, text=True, timeout=900, check=False, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    (sdist,) = (tmp_path / "dist").glob("*.tar.gz")
    return wheel, sdist


def test_a_wheel_and_an_sdist_are_built_and_pass_twine(tmp_path: Path) -> None:
    try:
        wheel, sdist = _build(tmp_path)
    except SetupError as exc:
        skip_unless_ci(str(exc))
    assert wheel.name == f"ha_chaos_lab-{__version__}-py3-none-any.whl"
    assert sdist.name == f"ha_chaos_lab-{__version__}.tar.gz"
    checked = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", str(wheel), str(sdist)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert checked.returncode == 0 and checked.stdout.count("PASSED") == 2, checked.stdout
    names = set(zipfile.ZipFile(wheel).namelist())
    needed = {
        "lab/cli/main.py", "scenarios/test_campaign.py", "lab/pytest_campaign.py",
        "containers/broker_ref/Dockerfile", "containers/compose/n1.json",
        "lab/targets/brokerj/deviations.toml", "broker_ref/__main__.py", "clients/__init__.py",
    }  # fmt: skip
    assert needed <= names, sorted(needed - names)
    info = f"ha_chaos_lab-{__version__}.dist-info"
    entry = zipfile.ZipFile(wheel).read(f"{info}/entry_points.txt").decode()
    assert "lab = lab.cli.main:main" in entry and "lab = lab.pytest_plugin" in entry
    metadata = zipfile.ZipFile(wheel).read(f"{info}/METADATA").decode()
    assert f"Version: {__version__}" in metadata and "Provides-Extra: nightly" in metadata
    assert not any(n.startswith(("tests/", "docs/")) for n in names)


@pytest.mark.processes
def test_the_install_line_at_the_tag_from_a_folder_of_its_own(tmp_path: Path) -> None:
    """docs/library.md's line, run in a project of its own (a copy of examples/), the lab's
    repository replaced by a clone of this one tagged as the release; then the installed
    lab, outside every checkout, breaks an incident and its printed `reproduce:` line
    reproduces it from another folder."""
    try:
        toxiproxy = Path(find_server_binary())
        house = wheelhouse(tmp_path)
    except SetupError as exc:
        skip_unless_ci(str(exc))
    clone = tmp_path / "lab-repository"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True, timeout=300)
    subprocess.run(["git", "-C", str(clone), "tag", "-f", TAG], check=True, capture_output=True)
    (line,) = [x for x in _install_lines() if "[" not in x.split(" @ ")[0]]
    words = shlex.split(line.replace(_repository(), f"file://localhost{clone}"))
    app = tmp_path / "app"
    shutil.copytree(ROOT / "examples", app, ignore=shutil.ignore_patterns("__pycache__"))
    venv = app / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    _pip(python, "install", "--quiet", "--no-index", "--find-links", str(house), *words, cwd=app)
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "toxiproxy-server").symlink_to(toxiproxy)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{tools}{os.pathsep}/usr/sbin:/usr/bin:/sbin:/bin"

    def run(*argv: str, cwd: Path = app) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            list(argv), cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False
        )

    assert run("lab", "--version").stdout.strip() == f"lab {__version__}"
    skipped = run("pytest", "--pyargs", "scenarios.test_campaign", "-q", "-rs")
    assert skipped.returncode == 0 and "--lab-campaign BUDGET" in skipped.stdout, skipped.stdout
    incident = app / "ack-none-crash.toml"
    shutil.copy2(ROOT / "incidents" / "ack-none-crash.toml", incident)
    broke = run("lab", "run", "--spec", incident.name)
    assert broke.returncode == 1, broke.stdout + broke.stderr[-2000:]
    reproduce = broke.stdout.strip().splitlines()[-1]
    folder = (app / broke.stdout.splitlines()[0]).resolve()
    assert reproduce == f"reproduce: lab replay {folder}"  # the lab on PATH, a path from anywhere
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    again = run("bash", "-c", reproduce.removeprefix("reproduce: "), cwd=elsewhere)
    assert again.returncode == 1, again.stdout + again.stderr[-2000:]
    assert again.stdout.strip().splitlines()[-1] == "replay: reproduced 1/1 (lost)"
