"""site.yml's fast path: the inputs digest, what a node's stamp observes, and what makes it stale."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils.site import stamp as ss

SITE = "venv/lib/python3.12/site-packages"
HOSTS: dict[str, dict[str, Any]] = {
    "node1": {
        "ansible_host": "10.99.0.11",
        "mesh_network_ports": {"node2": "data0", "node3": "data1"},
        "groups": {"all": ["node1", "node2", "node3"]},
        "inventory_dir": "/home/a/inv",
        "ansible_check_mode": False,
    },
    "node2": {"ansible_host": "10.99.0.12", "groups": {"all": ["node1", "node2", "node3"]}},
}


def _hosts(**changes: Any) -> dict[str, dict[str, Any]]:
    out = json.loads(json.dumps(HOSTS))
    for dotted, value in changes.items():
        host, key = dotted.split("__")
        out[host][key] = value
    return out


def test_inventory_digest_is_stable_and_ignores_what_is_not_the_inventory() -> None:
    first = ss.inventory_digest(HOSTS, "code1")
    assert len(first) == 64 and ss.inventory_digest(_hosts(), "code1") == first
    # the machine, the mode and the fast path switch are not the inventory
    assert ss.inventory_digest(_hosts(node1__inventory_dir="/tmp/x"), "code1") == first
    assert ss.inventory_digest(_hosts(node1__ansible_check_mode=True), "code1") == first
    assert ss.inventory_digest(_hosts(node2__rdmaops_fast_path=False), "code1") == first


def test_inventory_digest_ignores_cached_facts() -> None:
    # with a fact cache, hostvars carry the facts under ansible_facts and as ansible_<name> variables
    cached = _hosts(
        node1__ansible_facts={"date_time": {"epoch": "1"}, "kernel": "6.1"},
        node1__ansible_date_time={"epoch": "1"},
        node1__ansible_kernel="6.1",
        node1__ansible_local={"python_env": {}},
    )
    assert ss.inventory_digest(cached, "code1") == ss.inventory_digest(HOSTS, "code1")


@pytest.mark.parametrize(
    "change",
    [
        {"node1__mesh_network_ports": {"node2": "data1", "node3": "data0"}},  # swapped ports
        {"node2__ansible_host": "10.99.0.13"},
        {"node1__groups": {"all": ["node2", "node1", "node3"]}},  # a reordered host list
        {"node2__recipe": "glm"},  # an extra var
        {"node2__slurm_partition": "{{ other }}"},  # a templated value, by its text
    ],
)
def test_inventory_digest_changes_with_the_inventory(change: dict[str, Any]) -> None:
    assert ss.inventory_digest(_hosts(**change), "code1") != ss.inventory_digest(HOSTS, "code1")


def test_inventory_digest_changes_with_the_code_and_a_host_more() -> None:
    base = ss.inventory_digest(HOSTS, "code1")
    assert ss.inventory_digest(HOSTS, "code2") != base
    assert ss.inventory_digest({**HOSTS, "node3": {"ansible_host": "10.99.0.13"}}, "code1") != base
    with pytest.raises(ss.StampError, match="code digest"):
        ss.inventory_digest(HOSTS, "")
    with pytest.raises(ss.StampError, match="'node9'"):
        ss.inventory_digest({"node9": ["not", "a", "mapping"]}, "c")  # type: ignore[dict-item]


def test_source_digest_follows_files_but_not_build_artefacts(tmp_path: Path) -> None:
    (tmp_path / "roles" / "r" / "tasks").mkdir(parents=True)
    (tmp_path / "roles" / "r" / "tasks" / "main.yml").write_text("---\n")
    (tmp_path / "plugins").mkdir()
    first = ss.source_digest(tmp_path, ["roles", "plugins"])
    (tmp_path / "plugins" / "__pycache__").mkdir()
    (tmp_path / "plugins" / "__pycache__" / "x.cpython-312.pyc").write_bytes(b"\0")
    assert ss.source_digest(tmp_path, ["roles", "plugins"]) == first
    for artefact in ("build/lib/x.py", "t.egg-info/PKG-INFO", ".pytest_cache/v"):
        (tmp_path / "plugins" / artefact).parent.mkdir(parents=True)
        (tmp_path / "plugins" / artefact).write_text("x")
    assert ss.source_digest(tmp_path, ["roles", "plugins"]) == first
    (tmp_path / "plugins" / "m.py").write_text("x = 1\n")
    added = ss.source_digest(tmp_path, ["roles", "plugins"])
    assert added != first
    (tmp_path / "plugins" / "m.py").write_text("x = 2\n")
    assert ss.source_digest(tmp_path, ["roles", "plugins"]) not in (first, added)
    with pytest.raises(ss.StampError, match="nope does not exist"):
        ss.source_digest(tmp_path, ["nope"])


@pytest.mark.parametrize(
    ("watch", "message"),
    [
        ([], "must map role names"),
        ({"rdma": ["a"]}, "watch of rdma: expected a mapping"),
        ({"rdma": {"file": ["/etc/x"]}}, "unknown kind 'file'"),
        ({"rdma": {"files": "/etc/x"}}, "files must be a list"),
        ({"rdma": {"files": ["etc/x"]}}, "'etc/x' is not an absolute path"),
        ({"slurm": {"services": [""]}}, "services entry '' is not a non-empty string"),
    ],
)
def test_check_watch_names_the_bad_entry(watch: Any, message: str) -> None:
    with pytest.raises(ss.StampError, match=message):
        ss.check_watch(watch)


def test_check_watch_sorts_and_drops_duplicates() -> None:
    got = ss.check_watch({"slurm": {"services": ["slurmd", "munge", "munge"]}, "nccl_mesh_plugin": None})
    assert got == {"slurm": {"services": ["munge", "slurmd"]}}


# `systemctl show --property=Id,ActiveState,UnitFileState -- munge.service slurmd.service nope.service`
SYSTEMCTL_SHOW = """\
Id=munge.service
ActiveState=active
UnitFileState=enabled

ActiveState=failed
Id=slurmd.service
UnitFileState=enabled

Id=nope.service
ActiveState=inactive
UnitFileState=
"""

# `ip -j addr show` (one line in reality; trimmed to the fields that matter)
IP_ADDR = json.dumps(
    [
        {
            "ifindex": 1,
            "ifname": "lo",
            "addr_info": [{"family": "inet", "local": "127.0.0.1", "prefixlen": 8, "scope": "host"}],
        },
        {
            "ifindex": 7,
            "ifname": "data0",
            "addr_info": [
                {"family": "inet", "local": "10.0.0.1", "prefixlen": 31, "scope": "global"},
                {"family": "inet", "local": "10.255.0.1", "prefixlen": 32, "scope": "global"},
                {"family": "inet6", "local": "fe80::1", "prefixlen": 64, "scope": "link"},
            ],
        },
        {"ifindex": 8, "ifname": "data1", "addr_info": []},
    ]
)


def test_parse_systemctl_show_is_order_free_and_marks_no_unit_file() -> None:
    assert ss.parse_systemctl_show(SYSTEMCTL_SHOW) == {
        "munge.service": "active/enabled",
        "slurmd.service": "failed/enabled",
        "nope.service": "inactive/-",
    }


def test_parse_ip_addr_keeps_global_addresses_and_names_missing_ports() -> None:
    assert ss.parse_ip_addr(IP_ADDR, ["data0", "data1", "data9"]) == {
        "data0": ["10.0.0.1/31", "10.255.0.1/32"],
        "data1": [],
        "data9": None,
    }
    with pytest.raises(ss.StampError, match="no JSON"):
        ss.parse_ip_addr("Device does not exist", ["data0"])


class FakeNode:
    """A node's root under tmp_path, and the commands' outputs (what the module's runner returns)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.services = SYSTEMCTL_SHOW.replace("failed", "active")
        self.dpkg = "munge installed\nslurmd installed\n"
        self.ip = IP_ADDR
        self.calls: list[list[str]] = []
        (root / "etc" / "slurm").mkdir(parents=True)
        (root / "etc" / "slurm" / "slurm.conf").write_text("ClusterName=lab\n")
        (root / "venv" / "lib" / "python3.12" / "site-packages" / "torch-2.11.0.dist-info").mkdir(
            parents=True
        )
        (root / "etc" / "os-release").write_text('ID=debian\nVERSION_ID="12"\n')

    def run(self, argv: list[str]) -> tuple[int, str, str]:
        self.calls.append(argv)
        if argv[0] == "systemctl":
            return 0, self.services, ""
        if argv[0] == "dpkg-query":
            return 1, self.dpkg, "dpkg-query: no packages found matching nope\n"
        if argv[0] == "ip":
            return 0, self.ip, ""
        raise AssertionError(argv)


WATCH = ss.check_watch(
    {
        "slurm": {
            "files": ["/etc/slurm/slurm.conf", "/etc/slurm/gres.conf"],
            "services": ["munge", "slurmd"],
            "packages": ["munge", "slurmd"],
        },
        "python_env": {"globs": ["/venv/lib/python3*/site-packages/*.dist-info"]},
        "mesh_network": {"addresses": ["data0"]},
    }
)


def test_observe_reads_each_kind_with_one_command_per_kind(tmp_path: Path) -> None:
    node = FakeNode(tmp_path)
    seen = ss.observe(WATCH, node.run, root=str(tmp_path))
    assert [c[0] for c in node.calls] == ["systemctl", "dpkg-query", "ip"]
    conf = hashlib.sha256(b"ClusterName=lab\n").hexdigest()
    assert seen["slurm"] == {
        "files": {"/etc/slurm/gres.conf": None, "/etc/slurm/slurm.conf": conf},
        "services": {"munge": "active/enabled", "slurmd": "active/enabled"},
        "packages": {"munge": True, "slurmd": True},
    }
    assert seen["python_env"]["globs"] == {
        "/venv/lib/python3*/site-packages/*.dist-info": [
            "/venv/lib/python3.12/site-packages/torch-2.11.0.dist-info"
        ]
    }
    assert seen["mesh_network"]["addresses"] == {"data0": ["10.0.0.1/31", "10.255.0.1/32"]}
    assert seen["node"]["os"] == "debian 12" and seen["node"]["gpus"] == 0


def _stale_after(tmp_path: Path, change: Any) -> list[str]:
    node = FakeNode(tmp_path)
    stamp = tmp_path / "stamp.json"
    stamp.write_text(ss.render("d1", WATCH, ss.observe(WATCH, node.run, root=str(tmp_path))))
    current, reasons = ss.check(str(stamp), "d1", node.run, root=str(tmp_path))[:2]
    assert current and reasons == []
    change(node)
    current, reasons = ss.check(str(stamp), "d1", node.run, root=str(tmp_path))[:2]
    assert not current
    return reasons


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (
            lambda n: (n.root / "etc/slurm/slurm.conf").write_text("ClusterName=other\n"),
            "slurm: /etc/slurm/slurm.conf changed",
        ),
        (lambda n: (n.root / "etc/slurm/slurm.conf").unlink(), "slurm: /etc/slurm/slurm.conf is gone"),
        (lambda n: (n.root / "etc/slurm/gres.conf").write_text(""), "slurm: /etc/slurm/gres.conf appeared"),
        (
            lambda n: setattr(n, "services", SYSTEMCTL_SHOW),
            "slurm: service slurmd was active/enabled, is failed/enabled (active/enabled)",
        ),
        (lambda n: setattr(n, "dpkg", "munge installed\n"), "slurm: package slurmd is no longer installed"),
        (
            lambda n: (n.root / "venv/lib/python3.12/site-packages/torch-2.11.0.dist-info").rename(
                n.root / "venv/lib/python3.12/site-packages/torch-2.10.0.dist-info"
            ),
            "python_env: /venv/lib/python3*/site-packages/*.dist-info: gone "
            "/venv/lib/python3.12/site-packages/torch-2.11.0.dist-info; "
            "new /venv/lib/python3.12/site-packages/torch-2.10.0.dist-info",
        ),
        (
            lambda n: setattr(n, "ip", IP_ADDR.replace("10.0.0.1", "10.0.0.3")),
            "mesh_network: addresses of data0 were ['10.0.0.1/31', '10.255.0.1/32'], "
            "are ['10.0.0.3/31', '10.255.0.1/32']",
        ),
        (lambda n: (n.root / "etc/os-release").write_text("ID=ubuntu\nVERSION_ID=24.04\n"), "node: os was"),
    ],
)
def test_check_names_what_changed_on_the_node(tmp_path: Path, change: Any, reason: str) -> None:
    reasons = _stale_after(tmp_path, change)
    assert len(reasons) == 1 and reasons[0].startswith(reason), reasons


def test_check_without_a_usable_stamp_or_with_other_inputs(tmp_path: Path) -> None:
    node = FakeNode(tmp_path)
    stamp = tmp_path / "stamp.json"
    current, reasons = ss.check(str(stamp), "d1", node.run, root=str(tmp_path))[:2]
    assert not current and reasons[0].startswith(f"no stamp at {stamp}")
    assert node.calls == []  # nothing observed when there is nothing to compare with
    stamp.write_text("{")
    assert ss.check(str(stamp), "d1", node.run)[1] == [f"{stamp} is not JSON"]
    stamp.write_text(json.dumps({"version": 99}))
    assert ss.check(str(stamp), "d1", node.run)[1] == [f"{stamp} is not a version 1 stamp"]
    stamp.write_text(ss.render("d1", WATCH, ss.observe(WATCH, node.run, root=str(tmp_path))))
    current, reasons = ss.check(str(stamp), "d2", node.run, root=str(tmp_path))[:2]
    assert not current
    assert reasons == [
        "the inventory, the extra vars or the collection's code changed since the last converge"
    ]


def test_render_is_the_same_bytes_for_the_same_converge(tmp_path: Path) -> None:
    node = FakeNode(tmp_path)
    seen = ss.observe(WATCH, node.run, root=str(tmp_path))
    assert ss.render("d1", WATCH, seen) == ss.render("d1", WATCH, json.loads(json.dumps(seen)))
    assert json.loads(ss.render("d1", WATCH, seen))["version"] == ss.STAMP_VERSION
