"""RDMA port discovery from sysfs fixture trees (plugins/module_utils/node/rdma/sysfs.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils.node.rdma import sysfs as rs

from ....conftest import FIXTURE_DIR

FIXTURES = FIXTURE_DIR / "sysfs"


def ports_of(scenario: str) -> dict[str, dict]:
    return {p["name"]: p for p in rs.read_ports(str(FIXTURES / scenario))}


def test_mlx5_roce_active_port() -> None:
    port = ports_of("mlx5_roce")["mlx5_0/1"]
    assert port["state"] == "ACTIVE" and port["state_num"] == 4
    assert port["phys_state"] == "LinkUp" and port["phys_state_num"] == 5
    assert port["active"] is True
    assert port["link_layer"] == "Ethernet"
    assert port["rate"] == "100 Gb/sec (4X EDR)"
    assert port["rate_gbps"] == 100
    assert port["lid"] is None and port["sm_lid"] is None and port["port_guid"] is None
    assert port["netdev"] == "ens1f0np0"
    assert [(g["index"], g["type"], g["ipv4"]) for g in port["gids"]] == [
        (0, "RoCE v1", None),
        (1, "RoCE v2", None),
        (2, "RoCE v1", "192.168.100.1"),
        (3, "RoCE v2", "192.168.100.1"),
    ]
    assert port["gids"][3]["gid"] == "0000:0000:0000:0000:0000:ffff:c0a8:6401"
    assert port["roce_v2_ipv4_gid_index"] == 3


def test_zero_gid_slots_are_skipped() -> None:
    port = ports_of("mlx5_roce")["mlx5_0/1"]
    # 16 slots on disk, 12 of them all zeros.
    assert len(os.listdir(FIXTURES / "mlx5_roce/class/infiniband/mlx5_0/ports/1/gids")) == 16
    assert len(port["gids"]) == 4


def test_mlx5_roce_down_port_without_ipv4() -> None:
    port = ports_of("mlx5_roce")["mlx5_1/1"]
    assert (port["state"], port["phys_state"], port["active"]) == ("DOWN", "Disabled", False)
    assert port["netdev"] == "ens1f1np1"
    assert port["roce_v2_ipv4_gid_index"] is None


def test_infiniband_ports() -> None:
    ports = ports_of("infiniband")
    hdr = ports["mlx5_2/1"]
    assert hdr["link_layer"] == "InfiniBand"
    assert (hdr["lid"], hdr["sm_lid"]) == (5, 1)
    assert hdr["rate_gbps"] == 200
    assert hdr["port_guid"] == "0xb8599f0300d1f2ba"
    assert hdr["gids"] == [
        {
            "index": 0,
            "gid": "fe80:0000:0000:0000:b859:9f03:00d1:f2ba",
            "type": "IB",
            "ipv4": None,
            "netdev": None,
        }
    ]
    assert hdr["netdev"] == "ibp65s0"
    assert hdr["roce_v2_ipv4_gid_index"] is None
    no_sm = ports["mlx5_3/1"]
    assert (no_sm["state"], no_sm["phys_state"], no_sm["active"]) == ("INIT", "LinkUp", False)
    assert (no_sm["lid"], no_sm["sm_lid"]) == (0xFFFF, 0)
    assert no_sm["netdev"] is None


def test_ipv6_only_has_no_ipv4_gid_index() -> None:
    port = ports_of("roce_ipv6_only")["rocep1s0f0/1"]
    assert port["active"] is True
    assert {g["type"] for g in port["gids"]} == {"RoCE v1", "RoCE v2"}
    assert all(g["ipv4"] is None for g in port["gids"])
    assert port["roce_v2_ipv4_gid_index"] is None


def test_no_rdma_at_all(tmp_path: Path) -> None:
    assert rs.read_ports(str(tmp_path)) == []
    assert rs.inactive_ports([], True) == ["no RDMA device found (nothing under class/infiniband)"]
    assert rs.inactive_ports([], False) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("100 Gb/sec (4X EDR)", 100),
        ("2.5 Gb/sec (1X SDR)", 2.5),
        ("25 Gb/sec (1X EDR)", 25),
        ("400 Gb/sec (4X NDR)", 400),
        ("56 Gb/sec (4X FDR)", 56),
        (None, None),
    ],
)
def test_parse_rate(text: str | None, expected: float | None) -> None:
    assert rs.parse_rate(text) == expected


@pytest.mark.parametrize("bad", ["fast", "100 Mb/sec", ""])
def test_parse_rate_rejects_garbage(bad: str) -> None:
    with pytest.raises(rs.RdmaSysfsError, match="rate"):
        rs.parse_rate(bad)


def test_parse_enum() -> None:
    assert rs.parse_enum("4: ACTIVE") == (4, "ACTIVE")
    assert rs.parse_enum("7: Phy Test") == (7, "Phy Test")
    assert rs.parse_enum("4: PortConfigurationTraining") == (4, "PortConfigurationTraining")
    with pytest.raises(rs.RdmaSysfsError, match="ACTIVE"):
        rs.parse_enum("ACTIVE")


def test_gid_types_depend_on_link_layer() -> None:
    assert rs.gid_type("IB/RoCE v1", "InfiniBand") == "IB"
    assert rs.gid_type("IB/RoCE v1", "Ethernet") == "RoCE v1"
    assert rs.gid_type("RoCE v2", "Ethernet") == "RoCE v2"
    with pytest.raises(rs.RdmaSysfsError):
        rs.gid_type("RoCE v3", "Ethernet")


def test_required_by_device_and_port_name() -> None:
    ports = list(ports_of("mlx5_roce").values())
    assert rs.inactive_ports(ports, ["mlx5_0/1"]) == []
    problems = rs.inactive_ports(ports, ["mlx5_0", "mlx5_1", "mlx5_9/1"])
    assert problems == [
        "mlx5_9/1: no such RDMA port (present: mlx5_0/1, mlx5_1/1)",
        "mlx5_1/1: state DOWN, phys_state Disabled (link layer Ethernet, netdev ens1f1np1)",
    ]


def test_required_all_lists_every_inactive_port() -> None:
    ports = list(ports_of("infiniband").values())
    assert rs.inactive_ports(ports, True) == [
        "mlx5_3/1: state INIT, phys_state LinkUp (link layer InfiniBand, netdev none)"
    ]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (True, True),
        (False, False),
        (None, False),
        ("all", True),
        ("mlx5_0, mlx5_1/1", ["mlx5_0", "mlx5_1/1"]),
    ],
)
def test_normalize_required(spec: object, expected: object) -> None:
    assert rs.normalize_required(spec) == expected


def test_normalize_required_rejects_bad_values() -> None:
    with pytest.raises(rs.RdmaSysfsError, match="require_active"):
        rs.normalize_required([1, 2])


def test_dev_port_selects_netdev_of_second_port(tmp_path: Path) -> None:
    # A dual-port function (ConnectX-3 style): both netdevs hang off one PCI device.
    dev = tmp_path / "class/infiniband/mlx4_0"
    for name, dev_port in (("enp3s0", 0), ("enp3s0d1", 1)):
        (dev / "device/net" / name).mkdir(parents=True)
        (dev / "device/net" / name / "dev_port").write_text(f"{dev_port}\n")
    for port in (1, 2):
        pdir = dev / "ports" / str(port)
        pdir.mkdir(parents=True)
        (pdir / "state").write_text("4: ACTIVE\n")
        (pdir / "phys_state").write_text("5: LinkUp\n")
        (pdir / "link_layer").write_text("Ethernet\n")
        (pdir / "rate").write_text("40 Gb/sec (4X QDR)\n")
    ports = {p["port"]: p["netdev"] for p in rs.read_ports(str(tmp_path))}
    assert ports == {1: "enp3s0", 2: "enp3s0d1"}
