"""The zoo's canary: written into every scratch copy of the tree as `zoo_canary.py` (never part
of the product's packages), and called by a planted bug's canary code.

A bug's `[[canary]]` replacements (zoo/NAME.toml) put two kinds of call into the copy:

    import zoo_canary; zoo_canary.reached("...")     the buggy code ran
    import zoo_canary; zoo_canary.triggered("...")   it did what the correct code would not

Each process records the first call of each kind, with its wall-clock time and a detail, as
one JSON line appended to the file named by the environment variable LAB_ZOO_CANARY
(`{"what": "reached", "t": 1765000000.123, "pid": 4242, "detail": "..."}`); without the
variable it records nothing. The detection benchmark gives each campaign a file of its own and
reads, per campaign, when the bug was first reached and first triggered (Magma's reached /
triggered / detected).
"""

from __future__ import annotations

import json
import os
import time

__all__ = ["reached", "triggered"]

_SEEN: set[str] = set()


def _record(what: str, detail: str) -> None:
    path = os.environ.get("LAB_ZOO_CANARY")
    if not path or what in _SEEN:
        return
    _SEEN.add(what)
    line = json.dumps({"what": what, "t": time.time(), "pid": os.getpid(), "detail": detail[:200]})
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError:
        return  # a canary never breaks the code it watches
    try:
        os.write(fd, (line + "\n").encode("utf-8"))
    except OSError:
        pass
    finally:
        os.close(fd)


def reached(detail: str = "") -> None:
    """The bug's code ran."""
    _record("reached", detail)


def triggered(detail: str = "") -> None:
    """The bug's code did what the correct code would not."""
    _record("triggered", detail)
