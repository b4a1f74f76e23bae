"""The namespace rig the hosts backend is tested on: real namespaces, a real sshd in each, a
private working folder per host, and a range of addresses that reaches nothing but its bridge
(checked before it starts, refused when in doubt)."""

from __future__ import annotations

import ipaddress
import subprocess
from pathlib import Path

import pytest
from hosts_helpers import links, netns_names, on_host, rig_of, skip_without_rig

from lab.backends.ssh import rig as rig_module
from lab.backends.ssh.rig import RIGS, Rig
from lab.backends.ssh.rig_network import ip_json, route_refusal, subnet_refusal
from lab.ground.errors import SetupError
from lab.ground.paths import LAB_ROOT

pytestmark = pytest.mark.hosts


def test_a_rig_host_sees_only_its_own_folder_and_its_own_network(tmp_path: Path) -> None:
    with rig_of(2, tmp_path) as (rig, hosts_file, inventory):
        made = {rig.names.netns(1), rig.names.netns(2)}
        assert made <= netns_names()
        assert rig.names.bridge in links()
        seen = on_host(
            inventory,
            "n1",
            f"test -e {LAB_ROOT}/pyproject.toml && echo checkout; "
            "find /srv/lab /tmp -mindepth 1 | wc -l; ip route get 192.0.2.2 2>&1 || true",
        )
        lines = seen.splitlines()
        assert "checkout" not in lines  # the lab's checkout is not there to lean on
        assert lines[0] == "0"  # an empty working folder, an empty /tmp
        assert "unreachable" in seen.lower()  # no way out but the rig's /24
        subnet = ipaddress.ip_network(str(inventory.networks[0]))
        for route in ip_json("route", "show", netns=rig.names.netns(1)):
            assert ipaddress.ip_network(route["dst"]).subnet_of(subnet)  # type: ignore[arg-type]
        h2 = inventory.host_for("n2").address
        assert (
            on_host(inventory, "n1", f"timeout 5 bash -c '</dev/tcp/{h2}/22' && echo open").strip()
            == "open"
        )
    assert not made & netns_names()
    assert rig.names.bridge not in links()
    assert RIGS.read(rig.tag) is None
    assert not hosts_file.exists()


def test_a_range_a_route_of_the_machine_touches_is_refused(tmp_path: Path) -> None:
    """Real kernel answers, in a namespace of the test's own: a /24 someone routes is not
    the rig's, and an address that leaves by another device than the bridge stops the rig."""
    skip_without_rig()
    scratch = f"lab-test-{tmp_path.name[-20:]}"
    subprocess.run(["ip", "netns", "add", scratch], check=True)
    try:
        run = ["ip", "-n", scratch]
        subprocess.run(
            [*run, "link", "add", "d0", "type", "veth", "peer", "name", "d1"], check=True
        )
        subprocess.run([*run, "link", "set", "d1", "up"], check=True)
        subprocess.run([*run, "addr", "add", "198.18.200.1/24", "dev", "d0"], check=True)
        subprocess.run([*run, "link", "set", "d0", "up"], check=True)
        routes = ip_json("route", "show", "table", "all", netns=scratch)
        addresses = ip_json("addr", "show", netns=scratch)
        taken = ipaddress.ip_network("198.18.200.0/24")
        assert "route" in str(subnet_refusal(taken, routes, addresses))  # type: ignore[arg-type]
        free = ipaddress.ip_network("198.18.201.0/24")
        assert subnet_refusal(free, routes, addresses) is None  # type: ignore[arg-type]
        outside = ipaddress.ip_network("10.1.2.0/24")
        assert "outside" in str(subnet_refusal(outside, [], []))  # type: ignore[arg-type]
        answer = ip_json("route", "get", "198.18.200.11", netns=scratch)
        assert "d0" in str(route_refusal("198.18.200.11", "lrXg1b", answer))
        assert route_refusal("198.18.200.11", "d0", answer) is None
    finally:
        subprocess.run(["ip", "netns", "del", scratch], check=False)


def test_a_rig_whose_routes_are_in_doubt_is_not_made_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    skip_without_rig()
    monkeypatch.setattr(rig_module, "route_refusal", lambda *a: "198.18.x.y would go out by eth0")
    rig = Rig(2, tmp_path, say=lambda line: None)
    with pytest.raises(SetupError, match=r"will not start: .* out by eth0"):
        rig.up()
    assert not {rig.names.netns(1), rig.names.netns(2)} & netns_names()
    assert not {rig.names.bridge, rig.names.veth(1), rig.names.veth(2)} & links()
    assert RIGS.read(rig.tag) is None
