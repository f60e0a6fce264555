"""Lab naming, wiring plan and parsing (plugins/module_utils/lab.py); host plumbing runs in the lab itself."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils import lab

MOUNTINFO = """\
22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
35 22 0:30 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
44 35 0:39 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
45 35 0:40 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
46 35 0:41 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
101 22 0:50 / /var/lib/rdmaops-lab/lab/node1/root rw,relatime - overlay overlay rw,lowerdir=/b
102 22 0:51 / /var/lib/rdmaops-lab/lab/node10/root rw,relatime - overlay overlay rw,lowerdir=/b
103 22 0:52 / /var/lib/rdmaops-lab/lab2/node1/root rw,relatime - overlay overlay rw,lowerdir=/b
104 101 0:53 / /var/lib/rdmaops-lab/lab/node1/root/with\\040space rw - tmpfs tmpfs rw
"""


def nodes(n: int) -> list[str]:
    return lab.node_names("node", n)


def test_mesh_ports_cover_every_peer_once() -> None:
    plan = lab.make_plan("lab", nodes(5), "mesh", "10.99.0.0/24")
    assert len(plan.links) == 10
    for node in plan.nodes:
        peers = set(nodes(5)) - {node.name}
        assert set(node.ports) == peers
        assert sorted(node.ports.values()) == [f"data{i}" for i in range(4)]
    for link in plan.links:
        by = {n.name: n for n in plan.nodes}
        assert by[link.a].ports[link.b] == link.a_if
        assert by[link.b].ports[link.a] == link.b_if


def test_mesh_ports_do_not_change_when_nodes_are_appended() -> None:
    small = lab.make_plan("lab", nodes(3), "mesh", "10.99.0.0/24")
    big = lab.make_plan("lab", nodes(8), "mesh", "10.99.0.0/24")
    for before, after in zip(small.nodes, big.nodes, strict=False):
        assert {p: after.ports[p] for p in before.ports} == before.ports
        assert {i: after.macs[i] for i in before.macs} == before.macs
        assert (before.mgmt_ip, before.mgmt_mac) == (after.mgmt_ip, after.mgmt_mac)


def test_mesh_port_scheme() -> None:
    assert [lab.mesh_port(1, j) for j in (2, 3, 4)] == ["data0", "data1", "data2"]
    assert [lab.mesh_port(3, j) for j in (1, 2, 4)] == ["data0", "data1", "data2"]
    with pytest.raises(lab.LabError, match="node indices 2 and 2"):
        lab.mesh_port(2, 2)


def test_switched_plan_has_one_fabric_port() -> None:
    plan = lab.make_plan("mol", nodes(3), "switched", "10.98.0.0/24")
    assert plan.links == []
    assert all(n.ports == {"fabric": "data0"} and list(n.macs) == ["data0"] for n in plan.nodes)
    assert plan.as_dict()["fabric_bridge"] == "mol-dbr"


def test_management_addresses() -> None:
    plan = lab.make_plan("lab", nodes(3), "mesh", "10.99.0.0/24")
    assert plan.mgmt_host_ip == "10.99.0.1"
    assert [n.mgmt_ip for n in plan.nodes] == ["10.99.0.11", "10.99.0.12", "10.99.0.13"]
    assert [n.netns for n in plan.nodes] == ["lab-node1", "lab-node2", "lab-node3"]
    assert [n.mgmt_host_if for n in plan.nodes] == ["lab-m1", "lab-m2", "lab-m3"]


@pytest.mark.parametrize(
    ("cidr", "count", "message"),
    [
        ("10.99.0.1/24", 3, "'10.99.0.1/24' is not an IPv4 network"),
        ("10.99.0.0/33", 3, "'10.99.0.0/33' is not an IPv4 network"),
        ("fd00::/64", 3, "'fd00::/64' is not an IPv4 network"),
        ("10.99.0.0/28", 5, "10.99.0.0/28 has no room for 5 nodes"),
    ],
)
def test_bad_management_cidr(cidr: str, count: int, message: str) -> None:
    with pytest.raises(lab.LabError, match=message):
        lab.make_plan("lab", nodes(count), "mesh", cidr)


@pytest.mark.parametrize("name", ["", "Lab", "lab-x", "1lab", "abcdefghijk", "la b"])
def test_bad_lab_names(name: str) -> None:
    with pytest.raises(lab.LabError, match="lab name"):
        lab.make_plan(name, nodes(2), "mesh", "10.99.0.0/24")


def test_bad_topology_and_counts() -> None:
    with pytest.raises(lab.LabError, match="topology 'ring'"):
        lab.make_plan("lab", nodes(2), "ring", "10.99.0.0/24")
    with pytest.raises(lab.LabError, match="node count 0"):
        lab.node_names("node", 0)
    with pytest.raises(lab.LabError, match="node count 33"):
        lab.node_names("node", 33)
    with pytest.raises(lab.LabError, match="not unique"):
        lab.make_plan("lab", ["a", "a"], "mesh", "10.99.0.0/24")


def test_host_interface_names_fit_the_kernel_limit() -> None:
    plan = lab.make_plan("abcdefghij", nodes(32), "switched", "10.0.0.0/16")
    names = [n.mgmt_host_if for n in plan.nodes] + [lab.fabric_host_ifname("abcdefghij", 32)]
    assert max(len(x) for x in names) <= lab.IFNAMSIZ
    with pytest.raises(lab.LabError, match="longer than"):
        lab.mgmt_host_ifname("abcdefghij", 1000)


def test_macs_are_stable_unique_and_locally_administered() -> None:
    plan = lab.make_plan("lab", nodes(8), "mesh", "10.99.0.0/24")
    macs = [m for n in plan.nodes for m in [n.mgmt_mac, n.mgmt_host_mac, *n.macs.values()]]
    assert len(set(macs)) == len(macs)
    for mac in macs:
        first = int(mac.split(":")[0], 16)
        assert first & 0x02 and not first & 0x01
    assert lab.stable_mac("lab", "node1", "data0") == lab.stable_mac("lab", "node1", "data0")
    assert lab.stable_mac("lab", "node1", "data0") != lab.stable_mac("mol", "node1", "data0")


def test_instance_prefixes_never_overlap() -> None:
    # '<lab>-' is the ownership test for netns and links; names without '-' keep it exclusive.
    names = ["lab", "lab2", "mol", "l"]
    for a, b in itertools.permutations(names, 2):
        plan_b = lab.make_plan(b, nodes(3), "switched", "10.99.0.0/24")
        own_b = (
            [n.netns for n in plan_b.nodes] + [n.mgmt_host_if for n in plan_b.nodes] + [lab.mgmt_bridge(b)]
        )
        assert not any(x.startswith(a + "-") for x in own_b)


def test_mounts_under_is_exact_and_deepest_first() -> None:
    assert lab.mounts_under(MOUNTINFO, "/var/lib/rdmaops-lab/lab") == [
        "/var/lib/rdmaops-lab/lab/node1/root/with space",
        "/var/lib/rdmaops-lab/lab/node10/root",
        "/var/lib/rdmaops-lab/lab/node1/root",
    ]
    assert lab.mounts_under(MOUNTINFO, "/var/lib/rdmaops-lab/lab/node1/") == [
        "/var/lib/rdmaops-lab/lab/node1/root/with space",
        "/var/lib/rdmaops-lab/lab/node1/root",
    ]


def test_cgroup_mounts() -> None:
    assert lab.parse_cgroup_mounts(MOUNTINFO) == {
        "systemd": "/sys/fs/cgroup/systemd",
        "unified": "/sys/fs/cgroup/unified",
    }


def test_nspid_and_host_link_owner() -> None:
    assert lab.parse_nspid("Name:\tsystemd\nNSpid:\t4242\t1\n") == [4242, 1]
    assert lab.parse_nspid("Name:\tbash\n") == []
    assert lab.node_of_host_link("lab", {"ifalias": "lab:mgmt:node4"}) == "node4"
    assert lab.node_of_host_link("lab", {"ifalias": "lab:fabric:node2:data0"}) == "node2"
    assert lab.node_of_host_link("lab", {"ifalias": "mol:mgmt:node4"}) is None
    assert lab.node_of_host_link("lab", {}) is None


def test_render_block_replaces_only_its_block() -> None:
    marker = "rdmaops.cluster.lab management addresses"
    first = lab.render_block("127.0.0.1 localhost\n", "10.99.0.11 node1\n", marker)
    assert first == (f"127.0.0.1 localhost\n# BEGIN {marker}\n10.99.0.11 node1\n# END {marker}\n")
    edited = first + "10.255.0.1 node1-addr\n"
    second = lab.render_block(edited, "10.99.0.11 node1\n10.99.0.14 node4", marker)
    assert second == (
        "127.0.0.1 localhost\n"
        f"# BEGIN {marker}\n10.99.0.11 node1\n10.99.0.14 node4\n# END {marker}\n"
        "10.255.0.1 node1-addr\n"
    )
    assert lab.render_block(second, "10.99.0.11 node1\n10.99.0.14 node4\n", marker) == second
    assert lab.render_block("no newline", "x\n", "m") == "no newline\n# BEGIN m\nx\n# END m\n"


def test_write_root_file_changes_only_what_differs(tmp_path: Path) -> None:
    host = lab.Host("unit", runner=lambda argv: (0, "", ""))
    lab.write_root_file(host, str(tmp_path), "/etc/hostname", "node1\n", 0o644, None)
    assert (tmp_path / "etc/hostname").read_text() == "node1\n"
    assert oct((tmp_path / "etc/hostname").stat().st_mode & 0o7777) == oct(0o644)
    assert len(host.changes) == 1
    lab.write_root_file(host, str(tmp_path), "/etc/hostname", "node1\n", 0o644, None)
    assert len(host.changes) == 1
    lab.write_root_file(host, str(tmp_path), "/etc/hostname", "node1\n", 0o600, None)
    assert len(host.changes) == 2
    assert oct((tmp_path / "etc/hostname").stat().st_mode & 0o7777) == oct(0o600)


def test_write_root_file_check_mode_and_bad_paths(tmp_path: Path) -> None:
    host = lab.Host("unit", runner=lambda argv: (0, "", ""), check_mode=True)
    lab.write_root_file(host, str(tmp_path), "/etc/machine-id", "abc\n", 0o444, None)
    assert host.changes == [f"write {tmp_path}/etc/machine-id"]
    assert not (tmp_path / "etc").exists()
    for bad in ("/", "../etc/passwd", "/etc/../../x"):
        with pytest.raises(lab.LabError, match="inside the node's root"):
            lab.write_root_file(host, str(tmp_path), bad, "x", 0o644, None)


def test_exec_argv_strips_nsenter() -> None:
    argv = ["nsenter", "--net=/run/netns/lab-node1", "--", "systemd-nspawn", "--boot"]
    assert lab.exec_argv(argv) == ["systemd-nspawn", "--boot"]
    assert lab.exec_argv(["/usr/sbin/apt-cacher-ng", "-c", "/x"]) == ["/usr/sbin/apt-cacher-ng", "-c", "/x"]


def test_overlay_lowerdir() -> None:
    assert lab.overlay_lowerdir(MOUNTINFO, "/var/lib/rdmaops-lab/lab/node1/root") == "/b"
    assert lab.overlay_lowerdir(MOUNTINFO, "/var/lib/rdmaops-lab/lab/node1/root/with space") is None
    assert lab.overlay_lowerdir(MOUNTINFO, "/nowhere") is None


# `ss -Hltnp` as printed with a system-wide apt-cacher-ng and an instance's own proxy (seen on this host)
SS_FOREIGN = """\
LISTEN 0      250          0.0.0.0:3142      0.0.0.0:*    users:(("apt-cacher-ng",pid=30054,fd=12))
LISTEN 0      250             [::]:3142         [::]:*    users:(("apt-cacher-ng",pid=30054,fd=13))
LISTEN 0      128          0.0.0.0:22        0.0.0.0:*    users:(("sshd",pid=501,fd=3))
"""
SS_OWN = """\
LISTEN 0      250        10.99.0.1:3242      0.0.0.0:*    users:(("apt-cacher-ng",pid=41234,fd=11))
LISTEN 0      250        10.98.0.1:3242      0.0.0.0:*    users:(("apt-cacher-ng",pid=40000,fd=11))
"""


def test_port_holders_count_wildcards_and_skip_other_addresses_and_ports() -> None:
    assert lab.port_holders(SS_FOREIGN, "10.99.0.1", 3142) == [
        ("0.0.0.0:3142", 30054, "apt-cacher-ng"),
        ("[::]:3142", 30054, "apt-cacher-ng"),
    ]
    assert lab.port_holders(SS_FOREIGN, "10.99.0.1", 3242) == []
    # another instance's proxy on another management address is not in the way
    assert lab.port_holders(SS_OWN, "10.99.0.1", 3242) == [("10.99.0.1:3242", 41234, "apt-cacher-ng")]


def test_wait_listening_names_the_process_that_holds_the_port() -> None:
    host = lab.Host("unit", runner=lambda argv: (0, SS_FOREIGN + SS_OWN, ""))
    host.wait_listening("aptproxy", 41234, "10.99.0.1", 3242, timeout=0)  # its own listener: fine
    with pytest.raises(lab.LabError) as err:
        host.wait_listening("aptproxy", 41234, "10.99.0.1", 3142, timeout=0)
    assert (
        "aptproxy: 10.99.0.1:3142 is taken by another process: 0.0.0.0:3142 apt-cacher-ng (pid 30054)"
        in str(err.value)
    )
    with pytest.raises(lab.LabError, match=r"aptproxy \(pid 41234\) does not listen on 10\.99\.0\.1:3300"):
        host.wait_listening("aptproxy", 41234, "10.99.0.1", 3300, timeout=0)
