"""The shell lines and numbers behind the host faults, as pure functions (no host needed)."""

from __future__ import annotations

import pytest

from lab.backends.ssh.facts import faketime_keeps_monotonic
from lab.backends.ssh.filter_netem import filter_netem_lines, filter_netem_refusal
from lab.backends.ssh.host_tools import clock_spec, drift_offset, filter_lines, netem_lines
from lab.ground.errors import UsageError
from lab.ground.netem import netem_args


def test_a_cut_drops_both_ways_and_its_heal_deletes_while_present() -> None:
    cut = filter_lines(("10.0.0.2",), ("10.0.0.2",), "lab-hosts:1.1.abc", enabled=False)
    assert "-C OUTPUT -d 10.0.0.2/32 -m comment --comment lab-hosts:1.1.abc -j DROP" in cut
    assert "-I INPUT -s 10.0.0.2/32" in cut and "-D" not in cut
    heal = filter_lines(("10.0.0.2",), ("10.0.0.2",), "lab-hosts:1.1.abc", enabled=True)
    assert heal.count("while") == 2 and "-D OUTPUT" in heal and "-I" not in heal
    assert filter_lines((), ("10.0.0.3",), "t", False, "sudo -n ").startswith("{ sudo -n iptables")


def test_netem_arguments_are_checked_before_anything_starts() -> None:
    assert netem_args({"delay_ms": 100, "jitter_ms": 20, "loss_pct": 5}) == [
        "delay", "100ms", "20ms", "loss", "5%",
    ]  # fmt: skip
    for bad, why in [
        ({}, "at least one"),
        ({"loss_pct": 80}, "at most 50"),
        ({"reorder_pct": 10}, "needs delay_ms"),
        ({"jitter_ms": 5}, "needs delay_ms"),
        ({"latency": 5}, "unknown parameter latency"),
        ({"corrupt_pct": 120}, "0 to 100"),
    ]:
        with pytest.raises(UsageError, match=why):
            netem_args(bad)
    line = netem_lines("eth0", {"delay_ms": 50}, 22)
    assert "match ip sport 22 0xffff flowid 1ab:1" in line  # sshd's traffic is not shaped
    assert "netem delay 50ms" in line and "exit 3" in line  # someone else's qdisc: left alone


def test_without_netem_only_loss_and_duplication_are_made_by_packet_filter() -> None:
    assert filter_netem_refusal({"loss_pct": 10, "duplicate_pct": 5}) is None
    assert "not delay_ms" in str(filter_netem_refusal({"loss_pct": 10, "delay_ms": 5}))
    add = filter_netem_lines(
        "eth0", {"loss_pct": 10, "duplicate_pct": 5}, ("10.0.0.2",), "t", 22, True
    )
    assert "--probability 0.1000" in add and "! --sport 22" in add
    assert "-j TEE --gateway 10.0.0.2" in add and "-t mangle" in add
    remove = filter_netem_lines("eth0", {"loss_pct": 10}, (), "t", 22, False)
    assert "while" in remove and "-A" not in remove


def test_a_clock_is_written_as_libfaketime_reads_it() -> None:
    assert clock_spec(3600) == "+3600.000" and clock_spec(-2.5) == "-2.500"
    assert clock_spec(-2.5, 1.01) == "-2.500 x1.01"
    # A process 100 s old set to run at 1.5 keeps its clock where it was: 100 × 1.5 − 50.
    assert drift_offset(100.0, 1.5) == -50.0
    assert 100.0 * 1.5 + drift_offset(100.0, 1.5) == 100.0


@pytest.mark.parametrize(
    ("version", "keeps"),
    [("0.9.10-2.1", False), ("0.9.11-1", True), ("1:0.9.12-1", True), ("", False), ("x", False)],
)
def test_which_libfaketime_leaves_the_monotonic_clock_alone(version: str, keeps: bool) -> None:
    assert faketime_keeps_monotonic(version) is keeps
