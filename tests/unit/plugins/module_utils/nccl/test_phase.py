"""The nccl_env and nccl_mesh_plugin role phases (module_utils/nccl/phase.py)."""

from __future__ import annotations

from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.nccl import env_file, phase
from ansible_collections.rdmaops.cluster.plugins.module_utils.node.rdma.sysfs import read_ports

from ...conftest import FIXTURE_DIR

SYSFS = FIXTURE_DIR / "sysfs"
CHECK = {
    "socket_ifname": "nodeaddr0",
    "roce_qos": {},
    "conf_file": "/etc/nccl.conf",
    "env_file": "/etc/x.env",
}


def test_env_check_plans_the_dscp() -> None:
    assert phase.nccl_env_check(CHECK) == {"errors": [], "plan": {"dscp": 26}}
    assert phase.nccl_env_check(CHECK | {"roce_qos": {"dscp": "46"}})["plan"] == {"dscp": 46}


def test_env_check_names_every_bad_value_and_where_the_interface_comes_from() -> None:
    out = phase.nccl_env_check(CHECK | {"socket_ifname": "", "roce_qos": {"dscp": 64}, "env_file": "rel.env"})
    assert out["errors"] == [
        "nccl_env_socket_ifname '' is not a valid interface name (nccl_env_socket_ifname defaults to"
        " mesh_network_socket_ifname, which the mesh role exports)",
        "roce_qos.dscp must be an integer 0..63, got 64",
        "nccl_env_conf_file and nccl_env_file must be absolute paths",
    ]


PLAN: dict[str, Any] = {
    "transport": "tcp",
    "ports": [],
    "socket_ifname": "mesh0",
    "roce_qos": {},
    "gdr_level": "PHB",
    "hca": [],
    "gid_index": None,
    "net": {"NCCL_NET_PLUGIN": "mesh", "NCCL_MESH_NSOCKS": "4"},
    "extra": {"NCCL_MESH_NSOCKS": "8"},
    "files": [
        {"dest": "/etc/nccl.conf", "about": "NCCL reads this file."},
        {"dest": "/etc/x.env", "about": ""},
    ],
    "managed": "Ansible managed",
}


def test_env_plan_renders_both_files_in_the_one_format() -> None:
    out = phase.nccl_env_plan(PLAN)
    assert out["errors"] == []
    env = out["plan"]["env"]
    assert env["NCCL_MESH_NSOCKS"] == "8" and env["NCCL_NET_PLUGIN"] == "mesh"  # extra wins over net
    assert out["plan"]["files"]["/etc/nccl.conf"] == (
        "# Ansible managed\n# NCCL reads this file. Transport: tcp.\n"
        "GLOO_SOCKET_IFNAME=mesh0\nNCCL_IB_DISABLE=1\nNCCL_IB_TC=104\nNCCL_MESH_NSOCKS=8\n"
        "NCCL_NET_PLUGIN=mesh\nNCCL_SOCKET_IFNAME==mesh0\n"
    )
    assert out["plan"]["files"]["/etc/x.env"].startswith("# Ansible managed\n# Transport: tcp.\nGLOO")
    assert env_file.parse(out["plan"]["files"]["/etc/x.env"]) == env


def test_env_plan_uses_the_discovered_ports() -> None:
    ports = read_ports(str(SYSFS / "mlx5_roce"))
    out = phase.nccl_env_plan(PLAN | {"transport": "rdma", "ports": ports, "net": {}, "extra": {}})
    assert out["plan"]["env"]["NCCL_IB_HCA"] == "=mlx5_0:1" and out["plan"]["env"]["NCCL_IB_GID_INDEX"] == "3"


def test_env_plan_refuses_a_value_that_would_not_read_back() -> None:
    out = phase.nccl_env_plan(PLAN | {"extra": {"A": "x\ny"}})
    assert out["plan"] == {} and out["errors"] == [
        "environment variable A: value 'x\\ny' does not fit on one KEY=value line"
        " (line break, surrounding blanks or quotes)"
    ]


def test_env_plan_says_why_rdma_has_no_port() -> None:
    out = phase.nccl_env_plan(PLAN | {"transport": "rdma"})
    assert out["errors"] == [
        "transport is rdma but no RDMA port is ACTIVE (ports: none); use transport tcp or fix the ports"
    ]


MESH: dict[str, Any] = {
    "nccl_version": " 2.28.9\n",
    "force": False,
    "transport": "tcp",
    "ifname": "",
    "gid_index": None,
    "nsocks": 4,
    "debug": 0,
    "prefix": "/opt/rdmaops/nccl-mesh-plugin",
}


def test_mesh_plugin_check_decides() -> None:
    out = phase.nccl_mesh_plugin_check(MESH)
    assert out["errors"] == [] and out["plan"]["use_plugin"] is True and out["plan"]["nccl"] == "2.28.9"
    assert out["plan"]["env"] == {
        "NCCL_NET_PLUGIN": "mesh",
        "NCCL_MESH_TRANSPORT": "tcp",
        "NCCL_MESH_NSOCKS": "4",
    }
    builtin = phase.nccl_mesh_plugin_check(MESH | {"nccl_version": "2.30.7"})["plan"]
    assert builtin["use_plugin"] is False and builtin["env"] == {"NCCL_IB_SUBNET_AWARE_ROUTING": "1"}


def test_mesh_plugin_check_names_each_bad_setting() -> None:
    out = phase.nccl_mesh_plugin_check(MESH | {"nsocks": 0, "debug": 3})
    assert out["errors"] == [
        "nccl_mesh_plugin_nsocks must be an integer 1..16, got 0",
        "nccl_mesh_plugin_debug must be 0, 1 or 2, got 3",
    ]
    bad = phase.nccl_mesh_plugin_check(MESH | {"nccl_version": "two"})
    assert bad["errors"] == ["nccl_mesh_plugin: cannot read NCCL version 'two': expected MAJOR.MINOR.PATCH"]


def test_tcp_gets_the_socket_transport_threads_the_role_sets() -> None:
    out = phase.nccl_env_plan(PLAN | {"net": {}, "extra": {}, "socket_nthreads": 4, "nsocks_perthread": 4})
    env = out["plan"]["env"]
    assert env["NCCL_SOCKET_NTHREADS"] == "4" and env["NCCL_NSOCKS_PERTHREAD"] == "4"
    rdma = phase.nccl_env_plan(
        PLAN
        | {
            "transport": "rdma",
            "gid_index": 3,
            "hca": ["mlx5_0"],
            "net": {},
            "extra": {},
            "socket_nthreads": 4,
            "nsocks_perthread": 4,
        }
    )
    assert (
        "NCCL_SOCKET_NTHREADS" not in rdma["plan"]["env"]
    )  # RDMA does not use the socket transport's data path
    assert "NCCL_SOCKET_NTHREADS" not in phase.nccl_env_plan(PLAN)["plan"]["env"]  # unset: NCCL's defaults


def test_socket_threads_are_checked_against_nccls_limits_by_the_role_names() -> None:
    def errors(threads: Any, socks: Any) -> list[str]:
        return phase.nccl_env_check(CHECK | {"socket_nthreads": threads, "nsocks_perthread": socks})["errors"]

    assert errors(None, None) == [] and errors(4, 4) == [] and errors("16", 4) == []
    assert errors(17, 1) == ["nccl_env_socket_nthreads must be an integer 1..16, got 17"]
    assert errors(8, 16) == [
        "nccl_env_socket_nthreads x nccl_env_nsocks_perthread = 128 sockets per connection, NCCL's socket"
        " transport allows at most 64"
    ]
    assert errors(4, None) == [
        "set both nccl_env_socket_nthreads and nccl_env_nsocks_perthread or neither, got 4 and None"
    ]
    assert errors("four", 4) == ["nccl_env_socket_nthreads must be an integer 1..16, got 'four'"]
