"""Parsing of mountinfo, /proc/<pid>/status and ss output (plugins/module_utils/lab/parse.py)."""

from __future__ import annotations

from ansible_collections.rdmaops.cluster.plugins.module_utils.lab import parse as lab_parse

from ...conftest import FIXTURE_DIR

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

# `ss -Hltnp` seen here: a system-wide apt-cacher-ng on 0.0.0.0:3142; two instances' proxies on 3242
SS = FIXTURE_DIR / "ss"
SS_FOREIGN = (SS / "ltnp_system_apt_cacher_ng.txt").read_text()
SS_OWN = (SS / "ltnp_two_instances.txt").read_text()


def test_mounts_under_is_exact_and_deepest_first() -> None:
    assert lab_parse.mounts_under(MOUNTINFO, "/var/lib/rdmaops-lab/lab") == [
        "/var/lib/rdmaops-lab/lab/node1/root/with space",
        "/var/lib/rdmaops-lab/lab/node10/root",
        "/var/lib/rdmaops-lab/lab/node1/root",
    ]
    assert lab_parse.mounts_under(MOUNTINFO, "/var/lib/rdmaops-lab/lab/node1/") == [
        "/var/lib/rdmaops-lab/lab/node1/root/with space",
        "/var/lib/rdmaops-lab/lab/node1/root",
    ]


def test_cgroup_mounts() -> None:
    assert lab_parse.parse_cgroup_mounts(MOUNTINFO) == {
        "systemd": "/sys/fs/cgroup/systemd",
        "unified": "/sys/fs/cgroup/unified",
    }


def test_nspid() -> None:
    assert lab_parse.parse_nspid("Name:\tsystemd\nNSpid:\t4242\t1\n") == [4242, 1]
    assert lab_parse.parse_nspid("Name:\tbash\n") == []


def test_overlay_lowerdir() -> None:
    assert lab_parse.overlay_lowerdir(MOUNTINFO, "/var/lib/rdmaops-lab/lab/node1/root") == "/b"
    assert lab_parse.overlay_lowerdir(MOUNTINFO, "/var/lib/rdmaops-lab/lab/node1/root/with space") is None
    assert lab_parse.overlay_lowerdir(MOUNTINFO, "/nowhere") is None


def test_port_holders_count_wildcards_and_skip_other_addresses_and_ports() -> None:
    assert lab_parse.port_holders(SS_FOREIGN, "10.99.0.1", 3142) == [
        ("0.0.0.0:3142", 30054, "apt-cacher-ng"),
        ("[::]:3142", 30054, "apt-cacher-ng"),
    ]
    assert lab_parse.port_holders(SS_FOREIGN, "10.99.0.1", 3242) == []
    # another instance's proxy on another management address is not in the way
    assert lab_parse.port_holders(SS_OWN, "10.99.0.1", 3242) == [("10.99.0.1:3242", 41234, "apt-cacher-ng")]
