"""The optional package sets: a command that needs a missing one refuses in one line, naming
the modules and the command that installs them."""

from __future__ import annotations

import pytest

from lab.ground.errors import SetupError
from lab.ground.extras import DOCKER, REPORTS, Extra, require


def test_a_missing_extra_is_refused_with_the_command_that_installs_it() -> None:
    gone = Extra("reports", ("json", "no_such_module_of_the_lab"), "something")
    assert gone.missing() == ("no_such_module_of_the_lab",)
    with pytest.raises(SetupError) as refused:
        require(gone, "lab report")
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith("lab report needs no_such_module_of_the_lab, not installed")
    assert "scripts/bootstrap.sh --reports" in message
    assert "pip install 'ha-chaos-lab[reports]'" in message


def test_the_extras_the_test_session_has_are_found() -> None:
    # The suite is set up with --tests, which installs every extra.
    assert REPORTS.installed and DOCKER.installed
    require(REPORTS, "lab report")  # no refusal
