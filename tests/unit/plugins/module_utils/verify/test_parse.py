"""verify_parse: the port gate, the NCCL environment file and the all-reduce result."""

from __future__ import annotations

import json

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils.node.rdma import sysfs as rdma_sysfs
from ansible_collections.rdmaops.cluster.plugins.module_utils.verify import parse as vparse
from ansible_collections.rdmaops.cluster.plugins.module_utils.verify.plan import VerifyError

from ...conftest import FIXTURE_DIR as FIXTURES


def test_gate_without_rdma_device() -> None:
    info = {"rdma_available": False, "rdma_ports": []}
    required = vparse.gate(info, "node1", True, True)
    assert required["available"] is False
    assert (
        required["failures"]
        and "no RDMA device (nothing under /sys/class/infiniband)" in required["failures"][0]
    )
    assert "verify_rdma_required: false" in required["failures"][0]
    assert vparse.gate(info, "node1", False, True)["failures"] == []


def test_gate_on_real_sysfs_fixture_lists_down_ports() -> None:
    ports = rdma_sysfs.read_ports(str(FIXTURES / "sysfs" / "mlx5_roce"))
    result = vparse.gate({"rdma_ports": ports}, "node1", True, True)
    assert result["available"] is True
    assert result["failures"] == [
        "mlx5_1/1: state DOWN, phys_state Disabled (link layer Ethernet, netdev ens1f1np1)"
    ]
    assert "mlx5_0/1 ACTIVE/LinkUp Ethernet" in result["summary"] and "RoCEv2 GID 3" in result["summary"]
    assert vparse.gate({"rdma_ports": ports}, "node1", True, ["mlx5_0/1"])["failures"] == []


def test_env_file() -> None:
    text = "# written by nccl_env\nNCCL_IB_DISABLE=1\nexport NCCL_SOCKET_IFNAME='=nodeaddr0'\n\nA=\"b c\"\n"
    assert vparse.parse_env_file(text) == {
        "NCCL_IB_DISABLE": "1",
        "NCCL_SOCKET_IFNAME": "=nodeaddr0",
        "A": "b c",
    }
    with pytest.raises(VerifyError, match="line 2 is not KEY=VALUE"):
        vparse.parse_env_file("A=1\nnot an assignment\n")


def test_collective_result() -> None:
    doc = {"backend": "gloo", "world_size": 3, "results": [{"bytes": 8, "busbw_gbps": 1.0}]}
    runs = {
        "n1": {"rc": 0, "stdout": "noise\n" + json.dumps(doc) + "\n", "stderr": ""},
        "n2": {"rc": 0, "stdout": "", "stderr": ""},
    }
    assert vparse.collective_result(runs, "n1") == doc
    runs["n2"] = {
        "rc": 124,
        "stdout": "",
        "stderr": "W1122 waiting\ntorch.distributed.DistStoreError: timeout\n",
    }
    failed = vparse.collective_result(runs, "n1")
    assert failed["error"] == "n2: timed out: torch.distributed.DistStoreError: timeout"
    assert vparse.collective_result({"n1": {"rc": 0, "stdout": "x"}}, "n1")["error"].startswith(
        "n1: no result"
    )
