"""The public API's page (docs/api.md) is generated from the code: one entry for each name of
`lab.api`, and the docstrings it shows document every parameter and field of what a user
constructs or reads. (The strict docs build fails on a documented parameter the signature
lacks; this test fails on one the docstring leaves out.)"""

from __future__ import annotations

import dataclasses
import inspect
import re
from pathlib import Path

import pytest

import lab.api

PAGE = Path(__file__).resolve().parent.parent / "docs" / "api.md"

# The functions whose every parameter the page explains (the others take one obvious value).
FUNCTIONS = ("run", "fault_window", "fault_when", "scheduled", "uniform")


def _documented(doc: str) -> set[str]:
    """The names a Google-style `Parameters:` / `Attributes:` section lists."""
    names: set[str] = set()
    inside = False
    for line in doc.splitlines():
        if re.match(r"^(Parameters|Attributes|Args):\s*$", line):
            inside = True
            continue
        if inside and re.match(r"^\S", line):  # the section ended (text, or another section)
            inside = False
        found = re.match(r"^    \**(\w+)(?: \(.*\))?:", line) if inside else None
        if found:
            names.add(found.group(1))
    return names


def test_the_api_page_has_one_entry_for_each_public_name() -> None:
    entries = re.findall(r"^::: lab\.api\.(\w+)$", PAGE.read_text(encoding="utf-8"), re.M)
    assert sorted(entries) == sorted(lab.api.__all__)


@pytest.mark.parametrize(
    "name",
    sorted(
        n
        for n in lab.api.__all__
        if dataclasses.is_dataclass(getattr(lab.api, n)) or n in FUNCTIONS
    ),
)
def test_every_parameter_of_a_public_name_is_documented(name: str) -> None:
    obj = getattr(lab.api, name)
    doc = inspect.getdoc(obj) or ""
    if dataclasses.is_dataclass(obj):
        expected = {f.name for f in dataclasses.fields(obj)}
    else:
        expected = set(inspect.signature(obj).parameters)
    missing = sorted(expected - _documented(doc))
    assert not missing, f"lab.api.{name}'s docstring does not document {missing}"


def test_the_target_protocol_documents_its_attributes() -> None:
    attributes = set(lab.api.Target.__annotations__)
    missing = sorted(attributes - _documented(inspect.getdoc(lab.api.Target) or ""))
    assert not missing, f"Target's docstring does not document {missing}"
