"""The cli-startup benchmark's reading of `python -X importtime` (the benchmark itself is
run by hand: `lab bench cli-startup`)."""

from __future__ import annotations

import subprocess
import sys

from lab.bench.cli_startup import imported_modules


def test_importtime_lines_name_the_modules() -> None:
    lines = (
        "import time: self [us] | cumulative | imported package\n"
        "import time:       120 |        120 |   lab.backends.ssh\n"
        "import time:      1013 |      97972 |     asyncssh\n"
        "some other line\n"
    )
    assert imported_modules(lines) == {"lab.backends.ssh", "asyncssh"}


def test_a_real_trace_names_what_was_imported() -> None:
    traced = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import json.decoder"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert {"json", "json.decoder"} <= imported_modules(traced.stderr)
