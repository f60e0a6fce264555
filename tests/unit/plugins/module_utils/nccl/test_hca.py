"""NCCL_IB_HCA's syntax (module_utils/nccl/hca.py) as NCCL's documentation gives it."""

from __future__ import annotations

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils.nccl import hca


@pytest.mark.parametrize(
    ("spec", "device", "num", "used"),
    [
        ("", "mlx5_3", 1, True),
        ("mlx5", "mlx5_3", 1, True),  # a prefix
        ("mlx5_0", "mlx5_0", 2, True),  # any port
        ("mlx5_0:1", "mlx5_0", 2, False),
        ("=mlx5_0", "mlx5_01", 1, False),  # exact names
        ("=mlx5_0,mlx5_1:1", "mlx5_1", 1, True),
        ("^mlx5_1", "mlx5_1", 1, False),
        ("^mlx5_1", "mlx5_0", 1, True),
        ("^=mlx5_1:2", "mlx5_1", 1, True),
        ("=mlx5_0:1:0:0,mlx5_1:1:0:1", "mlx5_1", 1, True),  # rail and plane fields (newer NCCL)
        ("=mlx5_0::0:0", "mlx5_0", 2, True),  # every port, with a rail
        ("=mlx5_0:1", "mlx5_0", None, True),  # a NIC named without a port: any listed port of it
        ("=mlx5_0:1", "mlx5_1", None, False),
    ],
)
def test_nccl_ib_hca_selects_ports_as_nccl_does(spec: str, device: str, num: int | None, used: bool) -> None:
    assert hca.selects(spec, device, num) is used


def test_entries_keep_the_order_of_the_list() -> None:
    assert hca.entries("=mlx5_0:1,mlx5_3:1:3") == (
        False,
        True,
        [hca.Entry("mlx5_0", "1"), hca.Entry("mlx5_3", "1")],
    )
    assert hca.entries("^mlx5_1") == (True, False, [hca.Entry("mlx5_1", "")])
    assert hca.entries(None) == (False, False, [])
