"""Files the lab reads from a user, and files it writes whole or not at all.

Reading a user's file (an incident, a run's spec.json, a failure record, a campaign.json, a
target's deviations, a hosts file) fails in one way only: an `InputError` whose one line
names the file, and the line when one is to blame. Every class of bad input is told apart:

    a missing file            PATH: cannot read the <what>: no such file
    a folder, not a file      PATH: cannot read the <what>: a folder, not a file
    a FIFO, a device …        PATH: cannot read the <what>: not a regular file
    no permission             PATH: cannot read the <what>: permission denied
    too large                 PATH: cannot read the <what>: 190.7 MiB, more than a <what> may be …
    empty                     PATH: empty: a <what> holds at least one setting
    binary (a NUL byte)       PATH:LINE: binary data (a NUL byte at column C), not a <what>
    not UTF-8                 PATH:LINE: not UTF-8 text (byte 0xff at column C)
    a line too long           PATH:LINE: a line longer than 1 MiB: not a <what>
    a top level not a table   PATH: a <what> is a JSON object, not an array
    not TOML / not JSON       PATH:LINE: not valid TOML: …

Sizes are checked before anything is read, so a huge file is refused without being read.

    read_user_document(path, what)      a TOML or JSON file's top-level table, checked
    read_user_text(path, what)          a file's text, checked as above (no parsing)
    read_user_jsonl(path, what)         a JSONL file's objects with their line numbers
    user_file(path, what) / user_folder(path, what)
                                        a path that must be a readable file / folder
    text_problem(data)                  what makes bytes not text, or None
    first_text_problem(data)            the same, with its line and column
    write_json(path, obj)               a JSON file written whole or not at all
    write_text(path, text)              a text file written whole or not at all
"""

from __future__ import annotations

import errno
import json
import os
import stat
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from lab.ground.errors import InputError

__all__ = [
    "DOCUMENT_LIMIT",
    "LINE_LIMIT",
    "first_text_problem",
    "read_user_document",
    "read_user_jsonl",
    "read_user_text",
    "text_problem",
    "user_file",
    "user_folder",
    "write_json",
    "write_text",
]

DOCUMENT_LIMIT = 64 << 20
"""The largest TOML or JSON document the lab reads whole (64 MiB)."""

LINE_LIMIT = 1 << 20
"""The longest line of a JSONL file the lab reads (1 MiB); no line it writes comes near."""

_READ_BLOCK = 1 << 20
_BOM = b"\xef\xbb\xbf"

DocumentKind = Literal["toml", "json"]


def write_json(path: Path, obj: Any) -> None:
    """Write a JSON file whole or not at all (a temporary file, then a rename)."""
    write_text(path, json.dumps(obj, indent=2) + "\n")


def write_text(path: Path, text: str) -> None:
    """Write a text file whole or not at all (a temporary file, then a rename)."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")  # writers never share one
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _reason(error: OSError) -> str:
    reasons = {
        errno.ENOENT: "no such file",
        errno.EISDIR: "a folder, not a file",
        errno.ENOTDIR: "a part of the path is a file, not a folder",
        errno.EACCES: "permission denied",
        errno.EPERM: "permission denied",
        errno.ELOOP: "a loop of symbolic links",
        errno.ENAMETOOLONG: "the name is too long",
    }
    return reasons.get(error.errno or 0, error.strerror or str(error)).lower()


def _a(what: str) -> str:
    """`what` with its indefinite article."""
    return f"{'an' if what[:1].lower() in 'aeiou' else 'a'} {what}"


def _cannot(path: Path, what: str, reason: str) -> InputError:
    return InputError(f"{path}: cannot read the {what}: {reason}")


def user_file(path: Path, what: str) -> os.stat_result:
    """The status of `path`, a regular file the lab can open; InputError otherwise.

    Never opens a FIFO or a device (that could block or never end)."""
    try:
        status = path.stat()
    except OSError as error:
        raise _cannot(path, what, _reason(error)) from None
    if stat.S_ISDIR(status.st_mode):
        raise _cannot(path, what, "a folder, not a file")
    if not stat.S_ISREG(status.st_mode):
        raise _cannot(path, what, "not a regular file")
    try:
        os.close(os.open(path, os.O_RDONLY))
    except OSError as error:
        raise _cannot(path, what, _reason(error)) from None
    return status


def user_folder(path: Path, what: str) -> Path:
    """`path`, a folder the lab can list; InputError otherwise (a file where a folder is
    expected, a missing folder, one it may not read)."""
    try:
        status = path.stat()
    except OSError as error:
        reason = "no such folder" if error.errno == errno.ENOENT else _reason(error)
        raise _cannot(path, what, reason) from None
    if not stat.S_ISDIR(status.st_mode):
        raise _cannot(path, what, "a file, not a folder")
    try:
        with os.scandir(path) as entries:
            next(entries, None)
    except OSError as error:
        raise _cannot(path, what, _reason(error)) from None
    return path


def text_problem(data: bytes) -> tuple[int, str] | None:
    """Why `data` is not UTF-8 text: (the offending byte's offset, what), or None.

    A NUL byte means binary data; so does a byte sequence UTF-8 does not allow."""
    nul = data.find(b"\0")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as error:
        if 0 <= nul < error.start:
            return nul, "binary data (a NUL byte"
        return error.start, f"not UTF-8 text (byte 0x{data[error.start]:02x}"
    if nul >= 0:
        return nul, "binary data (a NUL byte"
    return None


def first_text_problem(data: bytes) -> tuple[int, str] | None:
    """Where `data` first stops being UTF-8 text: (its line, from 1, and what is wrong there,
    with the column), or None."""
    found = text_problem(data)
    if found is None:
        return None
    offset, problem = found
    line_start = data.rfind(b"\n", 0, offset) + 1
    line = data.count(b"\n", 0, offset) + 1
    return line, f"{problem} at column {offset - line_start + 1})"


def _text_error(path: Path, what: str, data: bytes, first_line: int = 1) -> InputError | None:
    found = first_text_problem(data)
    if found is None:
        return None
    line, problem = found
    ending = f", not {_a(what)}" if problem.startswith("binary") else ""
    return InputError(f"{path}:{first_line + line - 1}: {problem}{ending}")


def read_user_text(path: Path, what: str, *, limit: int = DOCUMENT_LIMIT) -> str:
    """The whole text of the user's file `path`, UTF-8 (a leading byte-order mark dropped).

    Raises `InputError` with one line naming the file (and line): see the module's table.
    A file larger than `limit` bytes is refused before it is read."""
    status = user_file(path, what)
    if status.st_size > limit:
        raise _cannot(
            path,
            what,
            f"{status.st_size / 2**20:.1f} MiB, "
            f"more than {_a(what)} may be ({limit / 2**20:g} MiB)",
        )
    try:
        with path.open("rb") as stream:
            data = stream.read(limit + 1)
    except OSError as error:
        raise _cannot(path, what, _reason(error)) from None
    if len(data) > limit:  # grew since it was measured
        raise _cannot(path, what, f"more than {_a(what)} may be ({limit / 2**20:g} MiB)")
    data = data.removeprefix(_BOM)
    problem = _text_error(path, what, data)
    if problem is not None:
        raise problem
    if not data.strip():
        raise InputError(f"{path}: empty: {_a(what)} holds at least one setting")
    return data.decode("utf-8")


def read_user_document(
    path: Path, what: str, *, kind: DocumentKind | None = None, limit: int = DOCUMENT_LIMIT
) -> dict[str, Any]:
    """The top-level table of the user's TOML or JSON file `path` (`kind`; by default TOML
    when the name ends in .toml, JSON otherwise).

    Raises `InputError` with one line naming the file (and line): a file that cannot be
    read, is not UTF-8 text, is empty, does not parse, or is not a table at the top."""
    text = read_user_text(path, what, limit=limit)
    toml = (kind or ("toml" if path.suffix == ".toml" else "json")) == "toml"
    raw: Any
    if toml:
        try:
            raw = tomllib.loads(text)
        except tomllib.TOMLDecodeError as error:
            raise InputError(_toml_error(path, str(error))) from None
        return raw
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as error:
        raise InputError(
            f"{path}:{error.lineno}: not valid JSON: {error.msg} at column {error.colno}"
        ) from None
    except RecursionError:
        raise InputError(f"{path}: not valid JSON: nested too deeply") from None
    if not isinstance(raw, dict):
        raise InputError(f"{path}: {_a(what)} is a JSON object, not {_json_kind(raw)}")
    return raw


def _toml_error(path: Path, message: str) -> str:
    """tomllib says `… (at line L, column C)`: the line goes beside the file's name."""
    head, marker, place = message.rpartition(" (at line ")
    if marker and place.endswith(")"):
        line, _, column = place[:-1].partition(", column ")
        if line.isdigit():
            return f"{path}:{line}: not valid TOML: {head} at column {column}"
    return f"{path}: not valid TOML: {message}"


def _json_kind(value: object) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return "a number"


def read_user_jsonl(
    path: Path,
    what: str,
    *,
    torn_tail_ok: bool = False,
    empty_ok: bool = False,
    line_limit: int = LINE_LIMIT,
) -> Iterator[tuple[int, dict[str, Any]]]:
    """The JSON objects of the user's JSONL file `path`, one a line, with their line numbers
    (blank lines skipped). Streams: no more than one line is held, and a line longer than
    `line_limit` is refused without being read whole. A last line without its newline that
    does not parse is left out when `torn_tail_ok` (a writer killed half-way), refused
    otherwise; a file without a single object is refused unless `empty_ok`. Raises
    `InputError` with one line naming the file and the line."""
    user_file(path, what)
    number = 0
    found = False
    try:
        with path.open("rb") as stream:
            while True:
                line = stream.readline(line_limit + 1)
                if not line:
                    break
                number += 1
                if len(line) > line_limit and not line.endswith(b"\n"):
                    limit_text = f"{line_limit / (1 << 20):g} MiB"
                    raise InputError(
                        f"{path}:{number}: a line longer than {limit_text}: not {_a(what)}"
                    )
                if number == 1:
                    line = line.removeprefix(_BOM)
                problem = _text_error(path, what, line, number)
                if problem is not None:
                    raise problem
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except (json.JSONDecodeError, RecursionError) as error:
                    if torn_tail_ok and not line.endswith(b"\n") and not stream.read(1):
                        break
                    detail = error.msg if isinstance(error, json.JSONDecodeError) else "too deep"
                    raise InputError(f"{path}:{number}: not a JSON object: {detail}") from None
                if not isinstance(record, dict):
                    raise InputError(f"{path}:{number}: not a JSON object")
                found = True
                yield number, record
    except OSError as error:
        raise _cannot(path, what, _reason(error)) from None
    if not found and not empty_ok:
        raise InputError(f"{path}: empty: {_a(what)} holds at least one line")
