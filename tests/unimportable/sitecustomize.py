"""Loaded by Python at start-up when this folder is on PYTHONPATH: the top-level packages
named in LAB_TEST_UNIMPORTABLE (comma-separated) cannot be imported, as in an environment
that never installed them. Each attempt to import one is appended to the file named by
LAB_TEST_UNIMPORTABLE_LOG as `<pid> <module>`; asking whether one exists without importing
it (importlib.util.find_spec, as the lab's extras do) is answered "not found" and not logged.
"""

from __future__ import annotations

import os
import sys
from typing import Any

_BLOCKED = frozenset(filter(None, os.environ.get("LAB_TEST_UNIMPORTABLE", "").split(",")))
_LOG = os.environ.get("LAB_TEST_UNIMPORTABLE_LOG")


def _only_asked() -> bool:
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename == "<frozen importlib.util>":
            return True
        frame = frame.f_back  # type: ignore[assignment]
    return False


class _Unimportable:
    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name.partition(".")[0] not in _BLOCKED:
            return None
        if _LOG and not _only_asked():
            with open(_LOG, "a", encoding="utf-8") as log:
                log.write(f"{os.getpid()} {name}\n")
        raise ModuleNotFoundError(f"No module named {name!r} (made unimportable)", name=name)


if _BLOCKED:
    sys.meta_path.insert(0, _Unimportable())
