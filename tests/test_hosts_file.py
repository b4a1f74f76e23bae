"""The hosts file: read once, checked whole, one line naming the file and field otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_lab

from lab.backends.ssh.hosts_file import read_hosts_file
from lab.ground.errors import InputError

GOOD = """
networks = ["10.20.0.0/24"]
key = "id"
known_hosts = "known"
dir = "/var/tmp/lab"

[[host]]
name = "db1"
address = "10.20.0.11"
node = "n1"

[[host]]
address = "10.20.0.12"
node = "n2"
user = "lab"
port = 2222
python = "/usr/bin/python3.11"
"""


def _file(tmp_path: Path, text: str) -> Path:
    (tmp_path / "id").write_text("a key\n")
    (tmp_path / "known").write_text("")
    path = tmp_path / "hosts.toml"
    path.write_text(text)
    return path


def test_a_hosts_file_names_each_host_and_the_node_it_carries(tmp_path: Path) -> None:
    inventory = read_hosts_file(_file(tmp_path, GOOD))
    first, second = inventory.hosts
    assert (first.name, first.address, first.node, first.user, first.port) == (
        "db1", "10.20.0.11", "n1", "root", 22
    )  # fmt: skip
    assert (second.name, second.user, second.port, second.python) == (
        "host2", "lab", 2222, "/usr/bin/python3.11"
    )  # fmt: skip
    assert first.key == tmp_path / "id" and second.privileged == "sudo -n "
    assert inventory.host_for("n2") is second
    with pytest.raises(Exception, match="no host carries node n3"):
        inventory.check_nodes(("n1", "n2", "n3"))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (('networks = ["10.20.0.0/24"]', ""), "networks: required"),
        (("10.20.0.0/24", "10.0.0.0/4"), "wider than /8"),
        (("10.20.0.0/24", "127.0.0.0/8"), "loopback"),
        (("10.20.0.12", "10.30.0.12"), r"host 2 \(host2\).address: 10.30.0.12 .* outside"),
        (('node = "n2"', 'node = "n1"'), "n1 is carried by db1 already"),
        (('key = "id"', 'key = "missing"'), "key: .*missing is not a file"),
        (('dir = "/var/tmp/lab"', 'dir = "/etc"'), "not a folder the lab may fill"),
        (("port = 2222", "port = 70000"), "not a TCP port"),
        (('user = "lab"', 'user = "lab; rm"'), "user: 'lab; rm'"),
        (("[[host]]\nname", "colour = 1\n[[host]]\nname"), "colour: unknown key"),
        (('name = "db1"', 'name = "db1"\nhops = 2'), r"host 1.hops: unknown key"),
        (('address = "10.20.0.11"', "address = 5"), "address: required"),
    ],
)
def test_a_wrong_field_is_one_line_naming_it(
    tmp_path: Path, change: tuple[str, str], message: str
) -> None:
    path = _file(tmp_path, GOOD.replace(*change, 1))
    with pytest.raises(InputError, match=message) as caught:
        read_hosts_file(path)
    assert str(caught.value).startswith(f"{path}: ") and "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "empty: a hosts file holds at least one setting"),
        (b"networks = [\x00]", r":1: binary data \(a NUL byte at column 13\)"),
        (b"\n\xff\xfe", ":2: not UTF-8 text"),
        (b"x" * 5000, "not valid TOML"),
        (b"[[host]\n", ":1: not valid TOML"),
    ],
)
def test_a_file_that_is_no_text_is_refused_in_one_line(
    tmp_path: Path, content: bytes, message: str
) -> None:
    path = tmp_path / "hosts.toml"
    path.write_bytes(content)
    with pytest.raises(InputError, match=message):
        read_hosts_file(path)
    with pytest.raises(InputError, match="a folder, not a file"):
        read_hosts_file(tmp_path)


def test_the_cli_refuses_a_bad_hosts_file_before_anything_starts(tmp_path: Path) -> None:
    bad = _file(tmp_path, GOOD.replace("10.20.0.12", "192.0.2.9"))
    done = run_lab("run", "master-failure", "--backend", "ssh", "--hosts", str(bad), cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip().endswith("outside the declared networks (10.20.0.0/24)")
    assert len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "runs").exists()
    done = run_lab("run", "master-failure", "--backend", "ssh", cwd=tmp_path)
    assert done.returncode == 2 and "needs a hosts file: --hosts FILE" in done.stderr
    done = run_lab("run", "master-failure", "--hosts", str(bad), cwd=tmp_path)
    assert done.returncode == 2 and "--hosts is for --backend ssh" in done.stderr
