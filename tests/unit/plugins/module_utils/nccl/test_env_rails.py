"""A node with several fabric ports (module_utils/nccl/env.py, rails): NCCL_IB_HCA in rail order from the
ports sysfs shows behind each rail's interface, NCCL_CROSS_NIC=0, and every rail's interface for the socket
transport. The sysfs trees are the recorded ones (tests/unit/fixtures/sysfs), copied and edited where a test
needs a second ACTIVE port."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils.nccl import env, phase
from ansible_collections.rdmaops.cluster.plugins.module_utils.node.rdma.sysfs import read_ports

from ...conftest import FIXTURE_DIR

SYSFS = FIXTURE_DIR / "sysfs"
ROLE: dict[str, Any] = {"dscp": 26, "gdr_level": "PHB"}
RAILS = ["ens1f0np0", "ens1f1np1"]


def two_active_ports(tmp_path: Path) -> list[dict[str, Any]]:
    """mlx5_roce with its second function brought up: ACTIVE/LinkUp, 192.168.193.1 in GID slots 2 (RoCE v1)
    and 3 (RoCE v2) on ens1f1np1, as mlx5_0 holds 192.168.100.1."""
    root = tmp_path / "sysfs"
    shutil.copytree(SYSFS / "mlx5_roce", root)
    port = root / "class" / "infiniband" / "mlx5_1" / "ports" / "1"
    (port / "state").write_text("4: ACTIVE\n")
    (port / "phys_state").write_text("5: LinkUp\n")
    for index, kind in ((2, "IB/RoCE v1"), (3, "RoCE v2")):
        (port / "gids" / str(index)).write_text("0000:0000:0000:0000:0000:ffff:c0a8:c101\n")
        (port / "gid_attrs" / "types" / str(index)).write_text(f"{kind}\n")
        (port / "gid_attrs" / "ndevs" / str(index)).write_text("ens1f1np1\n")
    return read_ports(str(root))


def test_rdma_lists_each_rails_hca_in_rail_order_and_keeps_channels_on_their_rail(tmp_path: Path) -> None:
    ports = two_active_ports(tmp_path)
    out = env.compute("rdma", ports, "ens1f0np0,ens1f1np1", rails=RAILS, **ROLE)
    assert out == {
        "NCCL_IB_DISABLE": "0",
        "NCCL_CROSS_NIC": "0",
        "NCCL_IB_HCA": "=mlx5_0:1,mlx5_1:1",
        "NCCL_IB_GID_INDEX": "3",
        "NCCL_NET_GDR_LEVEL": "PHB",
        "NCCL_SOCKET_IFNAME": "=ens1f0np0,ens1f1np1",
        "GLOO_SOCKET_IFNAME": "ens1f0np0",
        "NCCL_IB_TC": "104",
    }
    # The rails' order, not the devices' names: rail 0 is the second function here.
    swapped = env.compute("rdma", ports, "ens1f1np1", rails=RAILS[::-1], **ROLE)
    assert swapped["NCCL_IB_HCA"] == "=mlx5_1:1,mlx5_0:1"


def test_a_rail_whose_port_is_down_or_missing_is_named() -> None:
    ports = read_ports(str(SYSFS / "mlx5_roce"))  # mlx5_1 (ens1f1np1) is DOWN/Disabled
    with pytest.raises(env.NcclEnvError) as down:
        env.compute("rdma", ports, "ens1f0np0", rails=RAILS, **ROLE)
    assert str(down.value) == (
        "rail1 (ens1f1np1): RDMA port mlx5_1/1 (DOWN, Disabled) is not ACTIVE; NCCL would use it:"
        " fix the link"
    )
    with pytest.raises(env.NcclEnvError) as missing:
        env.compute("rdma", ports, "ens1f0np0", rails=["ens1f0np0", "data1"], **ROLE)
    assert str(missing.value) == (
        "rail1 (data1): no RDMA port has the netdev data1 (ports: mlx5_0/1 on ens1f0np0, mlx5_1/1 on"
        " ens1f1np1); set the HCAs (nccl_env_hca) or fix the fabric ports"
    )


def test_explicit_hcas_are_the_rails_hcas() -> None:
    hcas = ["mlx5_4:1", "mlx5_6:1"]
    out = env.compute("rdma", [], "data0", rails=["data0", "data1"], hca=hcas, gid_index=3, **ROLE)
    assert out["NCCL_IB_HCA"] == "=mlx5_4:1,mlx5_6:1" and out["NCCL_CROSS_NIC"] == "0"


def test_tcp_lists_every_rails_interface_and_gloo_takes_the_first() -> None:
    out = env.compute("tcp", [], "data0,data1", rails=["data0", "data1"], **ROLE)
    assert (out["NCCL_SOCKET_IFNAME"], out["GLOO_SOCKET_IFNAME"]) == ("=data0,data1", "data0")
    # rail-optimized is an IB setting here (the design's): the socket transport gets no NCCL_CROSS_NIC
    assert out["NCCL_IB_DISABLE"] == "1" and "NCCL_CROSS_NIC" not in out


@pytest.mark.parametrize("transport", ["rdma", "tcp"])
def test_one_rail_renders_as_one_port_always_did(transport: str) -> None:
    ports = read_ports(str(SYSFS / "mlx5_roce"))
    one = env.compute(transport, ports, "ens1f0np0", rails=["ens1f0np0"], **ROLE)
    assert one == env.compute(transport, ports, "ens1f0np0", **ROLE)
    assert "NCCL_CROSS_NIC" not in one


def test_the_plan_phase_writes_the_rails_and_the_check_names_bad_ones(tmp_path: Path) -> None:
    args = {
        "transport": "rdma",
        "ports": two_active_ports(tmp_path),
        "socket_ifname": "ens1f0np0,ens1f1np1",
        "roce_qos": {},
        "gdr_level": "PHB",
        "hca": [],
        "gid_index": None,
        "net": {},
        "extra": {},
        "rails": RAILS,
        "files": [{"dest": "/etc/nccl.conf", "about": ""}],
        "managed": "Ansible managed",
    }
    text = phase.nccl_env_plan(args)["plan"]["files"]["/etc/nccl.conf"]
    assert "NCCL_CROSS_NIC=0\n" in text and "NCCL_IB_HCA==mlx5_0:1,mlx5_1:1\n" in text
    check = {"socket_ifname": "data0,data1", "roce_qos": {}, "conf_file": "/a", "env_file": "/b"}
    assert phase.nccl_env_check(check | {"rails": ["data0", "data1"]})["errors"] == []
    assert phase.nccl_env_check(check | {"rails": ["data0", "data0"]})["errors"] == [
        "nccl_env_rails: data0 is listed twice (one port per rail)"
    ]
