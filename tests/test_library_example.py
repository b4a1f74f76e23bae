"""examples/ is a project of its own that uses the lab as a library: its scenario, prediction
and target registered through entry points, its suite run with the lab's pytest plugin.
Here it is installed into a virtual environment of its own, the lab installed from this
checkout as its dependency (tests/example_venv.py), and its own tests run with that
environment's pytest: an incident file, a scenario of the test file and its own second
scenario through `lab_run`, and its entry points in `lab list`, `lab run` and a short
campaign.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from example_venv import make_venv

from lab.backends.toxiproxy import find_server_binary
from lab.ground.errors import SetupError
from lab.pytest_plugin import skip_unless_ci


# Long: tests/test_release.py installs the lab into a project of its own in the default suite.
@pytest.mark.long
@pytest.mark.processes
def test_the_example_project_passes_its_own_suite_in_a_venv_of_its_own(tmp_path: Path) -> None:
    try:
        toxiproxy = Path(find_server_binary())
        python, example = make_venv(tmp_path)
    except SetupError as exc:
        skip_unless_ci(str(exc))
    tools = tmp_path / "tools"  # Toxiproxy on PATH, as a user installs it; nothing of ours
    tools.mkdir()
    (tools / "toxiproxy-server").symlink_to(toxiproxy)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env["PATH"] = f"{python.parent}{os.pathsep}{tools}{os.pathsep}/usr/sbin:/usr/bin:/sbin:/bin"
    done = subprocess.run(
        [str(python.parent / "pytest"), "tests", "-q", "-n", "2"],
        cwd=example,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "5 passed" in done.stdout, done.stdout[-2000:]
