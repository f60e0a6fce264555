"""The rdma_port_info module end to end on sysfs fixtures (argument handling, failure message)."""

from __future__ import annotations

from pathlib import Path

from ansible_collections.rdmaops.cluster.plugins.modules import rdma_port_info

from ..conftest import FIXTURE_DIR, RunModule

FIXTURES = FIXTURE_DIR / "sysfs"


def test_reports_ports(run_module: RunModule) -> None:
    out = run_module(rdma_port_info, sysfs_root=str(FIXTURES / "mlx5_roce"))
    assert out["changed"] is False and not out.get("failed")
    assert out["rdma_available"] is True
    assert out["rdma_devices"] == ["mlx5_0", "mlx5_1"]
    assert [p["name"] for p in out["rdma_ports"]] == ["mlx5_0/1", "mlx5_1/1"]
    assert out["rdma_ports"][0]["roce_v2_ipv4_gid_index"] == 3


def test_require_active_lists_every_bad_port(run_module: RunModule) -> None:
    out = run_module(rdma_port_info, sysfs_root=str(FIXTURES / "mlx5_roce"), require_active=True)
    assert out["failed"] is True
    assert out["msg"] == (
        "RDMA ports not active: mlx5_1/1: state DOWN, phys_state Disabled"
        " (link layer Ethernet, netdev ens1f1np1)"
    )
    assert len(out["rdma_ports"]) == 2


def test_device_filter_and_required_list(run_module: RunModule) -> None:
    out = run_module(
        rdma_port_info,
        sysfs_root=str(FIXTURES / "mlx5_roce"),
        devices=["mlx5_0"],
        require_active=["mlx5_0/1"],
    )
    assert not out.get("failed")
    assert [p["name"] for p in out["rdma_ports"]] == ["mlx5_0/1"]


def test_no_rdma_device(run_module: RunModule, tmp_path: Path) -> None:
    out = run_module(rdma_port_info, sysfs_root=str(tmp_path))
    assert out["rdma_available"] is False and out["rdma_ports"] == []
    out = run_module(rdma_port_info, sysfs_root=str(tmp_path), require_active=True)
    assert out["failed"] is True and "no RDMA device found" in out["msg"]


def test_bad_require_active(run_module: RunModule) -> None:
    out = run_module(rdma_port_info, sysfs_root=str(FIXTURES / "mlx5_roce"), require_active={"a": 1})
    assert out["failed"] is True and "require_active must be" in out["msg"]
