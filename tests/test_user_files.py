"""The one reader of a user's files (lab.ground.files): every class of bad input is one
InputError line naming the file (and the line where there is one); good files read."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from bad_inputs import KINDS, make_bad, without_reading_everything

from lab.ground.errors import InputError
from lab.ground.files import (
    read_user_document,
    read_user_jsonl,
    text_problem,
    user_file,
    user_folder,
    write_json,
)

TOML = b'scenario = "incident"\nseed = 7\n[workload]\nrate = 10.0\n'
JSON = b'{"scenario": "incident",\n "seed": 7}\n'
JSONL = b'{"a": 1}\n{"a": 2}\n{"a": 3}\n'

# What each kind's one line says, after the file's name.
SAYS = {
    "binary": ("binary data", "not UTF-8 text"),
    "invalid-utf8": ("2: not UTF-8 text",),
    "nul-bytes": ("1: binary data (a NUL byte at column 1)",),
    "empty": ("empty",),
    "folder": ("a folder, not a file",),
    "huge-file": ("190.7 MiB, more than", "1: a line longer than 1 MiB"),
    "long-line": ("not valid", "a line longer than 1 MiB"),
    "missing": ("no such file",),
}


def _said(error: InputError, path: Path, kind: str) -> None:
    line = str(error)
    assert "\n" not in line
    assert line.startswith(str(path)), line
    assert any(words in line for words in SAYS[kind]), line


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("suffix", "good"), [(".toml", TOML), (".json", JSON)], ids=["toml", "json"]
)
def test_a_bad_document_is_one_line_naming_it(
    kind: str, suffix: str, good: bytes, tmp_path: Path
) -> None:
    path = make_bad(kind, tmp_path / f"incident{suffix}", good)
    with pytest.raises(InputError) as raised:
        read_user_document(path, "incident file")
    _said(raised.value, path, kind)


@pytest.mark.parametrize("kind", KINDS)
def test_a_bad_jsonl_file_is_one_line_naming_it(kind: str, tmp_path: Path) -> None:
    path = make_bad(kind, tmp_path / "lines.jsonl", JSONL)
    with pytest.raises(InputError) as raised:
        list(read_user_jsonl(path, "list of entries"))
    _said(raised.value, path, kind)


def test_good_documents_read_and_a_byte_order_mark_is_dropped(tmp_path: Path) -> None:
    toml, json_file = tmp_path / "a.toml", tmp_path / "a.json"
    toml.write_bytes(b"\xef\xbb\xbf" + TOML)
    json_file.write_bytes(JSON)
    assert read_user_document(toml, "incident file")["workload"] == {"rate": 10.0}
    assert read_user_document(json_file, "incident file") == {"scenario": "incident", "seed": 7}
    with pytest.raises(InputError, match=r"a\.json:1: not valid TOML"):  # the kind, not the name
        read_user_document(json_file, "incident file", kind="toml")


def test_a_parse_error_names_the_line(tmp_path: Path) -> None:
    toml, json_file = tmp_path / "a.toml", tmp_path / "a.json"
    toml.write_text('a = 1\nb = "\n', encoding="utf-8")
    json_file.write_text('{"a": 1,\n "b": }\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"a\.toml:2: not valid TOML: "):
        read_user_document(toml, "incident file")
    with pytest.raises(InputError, match=r"a\.json:2: not valid JSON: Expecting value at column 7"):
        read_user_document(json_file, "incident file")


def test_a_json_document_is_an_object(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_text("[1, 2]\n", encoding="utf-8")
    with pytest.raises(
        InputError, match=r"a\.json: an incident file is a JSON object, not an array"
    ):
        read_user_document(path, "incident file")


def test_jsonl_lines_come_with_their_numbers_and_a_torn_tail_may_be_left_out(
    tmp_path: Path,
) -> None:
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"a": 1}\n\n{"a": 2}\n{"a": ')
    with pytest.raises(InputError, match=r"a\.jsonl:4: not a JSON object"):
        list(read_user_jsonl(path, "list"))
    assert list(read_user_jsonl(path, "list", torn_tail_ok=True)) == [(1, {"a": 1}), (3, {"a": 2})]
    path.write_bytes(b'{"a": 1}\n[1]\n')
    with pytest.raises(InputError, match=r"a\.jsonl:2: not a JSON object$"):
        list(read_user_jsonl(path, "list"))


def test_a_fifo_is_refused_without_opening_it(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)  # opening it would wait for a writer forever
    with pytest.raises(
        InputError, match=r"fifo\.toml: cannot read the incident file: not a regular"
    ):
        read_user_document(fifo, "incident file")


def test_a_file_where_a_folder_is_expected_and_the_other_way(tmp_path: Path) -> None:
    afile = tmp_path / "a.json"
    afile.write_bytes(JSON)
    with pytest.raises(InputError, match=r"a\.json: cannot read the campaign folder: a file, not"):
        user_folder(afile, "campaign folder")
    with pytest.raises(InputError, match=r"cannot read the campaign folder: no such folder"):
        user_folder(tmp_path / "none", "campaign folder")
    with pytest.raises(InputError, match=r"cannot read the incident file: a folder, not a file"):
        user_file(tmp_path, "incident file")
    with pytest.raises(InputError, match=r"a part of the path is a file, not a folder"):
        user_file(afile / "spec.json", "run spec")


def test_text_problem_finds_the_first_bad_byte() -> None:
    assert text_problem(b"plain text\n") is None
    assert text_problem("é".encode()) is None
    assert text_problem(b"ab\0c\xff") == (2, "binary data (a NUL byte")
    assert text_problem(b"ab\xffc\0") == (2, "not UTF-8 text (byte 0xff")


def test_an_unreadable_file_is_named(tmp_path: Path) -> None:
    secret = tmp_path / "incident.toml"
    secret.write_bytes(TOML)
    secret.chmod(0)
    program = (
        "import sys; from pathlib import Path; from lab.ground.files import read_user_document;"
        "read_user_document(Path(sys.argv[1]), 'incident file')"
    )
    child = subprocess.run(
        [sys.executable, "-c", program, str(secret)],
        preexec_fn=without_reading_everything if os.geteuid() == 0 else None,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert f"InputError: {secret}: cannot read the incident file: permission denied" in child.stderr


def test_write_json_leaves_no_temporary_file_when_it_fails(tmp_path: Path) -> None:
    target = tmp_path / "result.json"
    with pytest.raises(TypeError):
        write_json(target, {"not json": object()})
    assert list(tmp_path.iterdir()) == []
