"""The command a person types to run the lab (or pytest) again, as the lab prints it in a
`reproduce:` line, in result.json and in Allure: the program that is running now, named
so that the line works where it is shown.

    shown_command("lab")        "lab" when the `lab` found on PATH is this one; else this
                                environment's own `lab` by its absolute path (what started
                                the process, or the script beside this Python); else
                                `PYTHON -m lab`
    shown_command("pytest")     the same for pytest

Never a path of the lab's own checkout: a lab installed into a project of its own has none.
The answer is read from the running process (its argv[0], its Python, PATH) when asked,
never at import.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys

__all__ = ["shown_command"]


def _script(name: str, argv0: str, executable: str) -> str | None:
    """The script `name` this process runs as: argv[0] when it is that script, else the one
    installed beside this Python (a virtual environment's bin/); None when neither is."""
    if os.path.basename(argv0) == name and os.path.isfile(argv0):
        return os.path.abspath(argv0)
    beside = os.path.join(os.path.dirname(executable), name)
    if executable and os.path.isfile(beside) and os.access(beside, os.X_OK):
        return os.path.abspath(beside)
    return None


def _same(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def shown_command(
    name: str,
    *,
    argv0: str | None = None,
    executable: str | None = None,
    path: str | None = None,
) -> str:
    """How to run `name` ("lab" or "pytest") as this process was run, for a person to type
    (the keyword arguments stand in for sys.argv[0], sys.executable and $PATH in tests)."""
    argv0 = sys.argv[0] if argv0 is None and sys.argv else (argv0 or "")
    executable = sys.executable if executable is None else executable
    script = _script(name, argv0, executable)
    on_path = shutil.which(name, path=path)
    if script is None:
        python = executable or "python3"
        return f"{shlex.quote(python)} -m {name}"
    if on_path is not None and _same(on_path, script):
        return name
    return shlex.quote(script)
