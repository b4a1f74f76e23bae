"""Every class of bad input a user can hand the lab, made on disk for the tests of each reader.

    make_bad(kind, path, good)   `path` made into a bad input of `kind` (`good` is what a
                                 well-formed file there would hold)

The kinds: a binary file (compressed bytes), invalid UTF-8 on line 2, NUL bytes, an empty
file, a folder where a file is expected, a huge file without a newline (200 MB, sparse: it
costs no disk), a long line of text (3 MiB, longer than any line the lab reads), and a
missing file. An unreadable file stops root only without the capabilities that let it read
any file: `lab_obeying_file_modes` runs commands in such a child process.
"""

from __future__ import annotations

import ctypes
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

KINDS = (
    "binary",
    "invalid-utf8",
    "nul-bytes",
    "empty",
    "folder",
    "huge-file",
    "long-line",
    "missing",
)
"""Every kind `make_bad` makes; each must be refused in one line naming the file."""

HUGE = 200_000_000
LONG_LINE = 3 << 20


def make_bad(kind: str, path: Path, good: bytes) -> Path:
    """Make `path` a bad input of `kind`; `good` must hold at least two lines."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "binary":
        path.write_bytes(gzip.compress(good * 20, mtime=0))
    elif kind == "invalid-utf8":
        first, _, rest = good.partition(b"\n")
        path.write_bytes(first + b"\n" + rest[:5] + b"\xff\xfe" + rest[5:])
    elif kind == "nul-bytes":
        path.write_bytes(b"\0" * 4096)
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "folder":
        path.mkdir()
    elif kind == "huge-file":
        with path.open("wb") as out:
            out.write(good.split(b"\n")[0][:20])
            out.truncate(HUGE)
    elif kind == "long-line":
        path.write_bytes(b'{"index": 0, "note": "' + b"x" * LONG_LINE)
    elif kind != "missing":
        raise ValueError(f"no bad input of kind {kind!r}")
    return path


_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH, _PR_CAPBSET_DROP = 1, 2, 24


def without_reading_everything() -> None:
    """In the child before exec: drop CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH from the
    bounding set, so the program it runs as root obeys file modes."""
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH):
        if libc.prctl(_PR_CAPBSET_DROP, capability, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


_MAIN = """
import json, sys
from lab.cli.main import main
codes = []
for argv in json.loads(sys.argv[1]):
    try:
        codes.append(main(argv))
    except SystemExit as exit_:
        codes.append(exit_.code)
    print("--- end ---", file=sys.stderr, flush=True)
print(json.dumps(codes))
"""


def lab_obeying_file_modes(commands: list[list[str]], cwd: Path) -> list[tuple[int, str]]:
    """Run `lab` commands in one child process that file modes stop even as root:
    (exit status, stderr) of each."""
    done = subprocess.run(
        [sys.executable, "-c", _MAIN, json.dumps(commands)],
        cwd=cwd,
        preexec_fn=without_reading_everything if os.geteuid() == 0 else None,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    codes = json.loads(done.stdout.strip().splitlines()[-1])
    errors = done.stderr.split("--- end ---\n")
    return list(zip(codes, errors, strict=False))
