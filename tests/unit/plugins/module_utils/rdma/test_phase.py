"""The rdma role's validate phase (module_utils/rdma/phase.py)."""

from __future__ import annotations

from typing import Any

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils.rdma.phase import rdma_check

GOOD: dict[str, Any] = {
    "packages": ["rdma-core", "perftest"],
    "kernel_modules": ["ib_core", "mlx5_ib"],
    "memlock_limit": "unlimited",
    "opensm": "auto",
    "opensm_priority": 0,
    "opensm_guids": [],
    "nic_qos_enabled": True,
    "roce_qos": {},
}


def test_good_variables_plan_the_roce_numbers() -> None:
    out = rdma_check(GOOD)
    assert out["errors"] == [] and out["plan"]["roce_qos"]["dscp"] == 26
    assert rdma_check(GOOD | {"nic_qos_enabled": False, "roce_qos": {"dscp": 99}})["plan"] == {
        "roce_qos": None
    }
    assert (
        rdma_check(GOOD | {"memlock_limit": 65536, "opensm": True, "opensm_priority": "15"})["errors"] == []
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"packages": "rdma-core"}, "rdma_packages must be a list of package names, got rdma-core"),
        ({"packages": ["Rdma"]}, "rdma_packages must be a list of package names, got ['Rdma']"),
        (
            {"kernel_modules": ["mlx5_ib", "bad mod"]},
            "rdma_kernel_modules must be a list of module names (letters, digits, _ and -), got ['bad mod']",
        ),
        ({"memlock_limit": "8G"}, "rdma_memlock_limit must be 'unlimited' or a number of KiB, got '8G'"),
        ({"opensm": "maybe"}, "rdma_opensm must be auto, true or false, got 'maybe'"),
        ({"opensm_priority": 16}, "rdma_opensm_priority must be an integer in 0..15, got '16'"),
        (
            {"opensm_guids": ["0x12"]},
            "rdma_opensm_guids must be port GUIDs like 0x0002c9030002fce9 (see ibstat -p), bad: ['0x12']",
        ),
        ({"roce_qos": {"cos": 8}}, "roce_qos.cos must be an integer 0..7, got 8"),
    ],
)
def test_each_bad_value_is_named(change: dict[str, Any], message: str) -> None:
    assert rdma_check(GOOD | change) == {"errors": [message], "plan": {}}
