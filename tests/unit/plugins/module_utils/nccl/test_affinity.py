"""GPU-to-NIC affinity (module_utils/nccl/affinity.py) on real ``nvidia-smi topo -m`` outputs of 4-NIC and
8-NIC servers: each GPU's nearest NIC, whether a NIC NCCL uses is at PIX/PXB, the SYS warnings, and the nodes
without nvidia-smi said once."""

from __future__ import annotations

from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.nccl import affinity

from ...conftest import FIXTURE_DIR

TOPO = FIXTURE_DIR / "nvidia-smi-topo"
H100 = (TOPO / "h100x8-8nic-sglang-issue-30401.txt").read_text()
ASUS = (TOPO / "asus-esc8000a-e12-4gpu-4nic.txt").read_text()
TRAVERSE = (TOPO / "traverse-4gpu-4nic-tabs.txt").read_text()
RDMA = {"NCCL_IB_DISABLE": "0", "NCCL_IB_HCA": "=" + ",".join(f"mlx5_{i}:1" for i in range(8))}


def ran(text: str) -> dict[str, Any]:
    return {"rc": 0, "stdout": text, "stderr": ""}


def brief(entry: dict[str, Any]) -> list[tuple[str, str, str, bool | None]]:
    return [(g["gpu"], "/".join(g["nearest"]), g["relation"], g["nccl_close"]) for g in entry["gpus"]]


def test_eight_rails_each_gpu_has_its_nic_at_pix() -> None:
    out = affinity.node(H100, RDMA)
    assert brief(out) == [(f"GPU{i}", f"mlx5_{i}", "PIX", True) for i in range(8)]
    assert out["warnings"] == [] and out["nccl_nics"] == [f"mlx5_{i}" for i in range(8)]


def test_four_nics_at_node_none_close_enough_for_pix_pxb() -> None:
    out = affinity.node(ASUS, {"NCCL_IB_HCA": "=mlx5_0:1,mlx5_2:1"})
    assert brief(out) == [
        ("GPU0", "mlx5_0/mlx5_1", "NODE", False),
        ("GPU1", "mlx5_0/mlx5_1", "NODE", False),
        ("GPU2", "mlx5_2/mlx5_3", "NODE", False),
        ("GPU3", "mlx5_2/mlx5_3", "NODE", False),
    ]
    assert [(g["nccl_nearest"], g["nccl_relation"]) for g in out["gpus"]] == [
        (["mlx5_0"], "NODE"),
        (["mlx5_0"], "NODE"),
        (["mlx5_2"], "NODE"),
        (["mlx5_2"], "NODE"),
    ]
    assert out["warnings"] == []


def test_nccl_restricted_to_the_other_sockets_nics_is_a_sys_warning() -> None:
    """The old-format Traverse node with NCCL told to use only mlx5_2 and mlx5_3: GPU0 and GPU1 reach them
    only across the sockets' interconnect though mlx5_0/mlx5_1 are NODE."""
    out = affinity.node(TRAVERSE, {"NCCL_IB_HCA": "=mlx5_2,mlx5_3"})
    assert [g["nccl_relation"] for g in out["gpus"]] == ["SYS", "SYS", "NODE", "NODE"]
    assert out["warnings"] == [
        f"GPU{i}'s nearest NIC that NCCL uses (NCCL_IB_HCA==mlx5_2,mlx5_3) is SYS (mlx5_2, mlx5_3); its"
        " nearest NIC, mlx5_0, mlx5_1 (NODE), is not one NCCL uses"
        for i in (0, 1)
    ]


def test_a_gpu_whose_nearest_nic_is_sys_is_warned_about() -> None:
    """None of the recorded servers has such a GPU (SOURCES.md); this matrix is written for the rule, in the
    old format of the Traverse output: one NIC on the first socket, GPU1 on the second."""
    text = (
        "\tGPU0\tGPU1\tmlx5_0\tCPU Affinity\tNUMA Affinity\n"
        "GPU0\t X \tSYS\tPIX\t0-15\t0\n"
        "GPU1\tSYS\t X \tSYS\t16-31\t1\n"
    )
    out = affinity.node(text, {})
    assert brief(out) == [("GPU0", "mlx5_0", "PIX", True), ("GPU1", "mlx5_0", "SYS", False)]
    assert out["warnings"] == [
        "GPU1's nearest NIC is SYS (mlx5_0): its network traffic crosses the CPUs' interconnect (and"
        " GPUDirect RDMA is not used that far unless NCCL_NET_GDR_LEVEL=SYS)"
    ]


def test_tcp_and_a_net_plugin_use_none_of_the_nics() -> None:
    tcp = affinity.node(H100, {"NCCL_IB_DISABLE": "1"})
    assert tcp["nccl_nics"] == [] and tcp["nccl_why"] == "NCCL runs over TCP (NCCL_IB_DISABLE=1)"
    assert {g["nccl_close"] for g in tcp["gpus"]} == {None}
    mesh = affinity.node(H100, {"NCCL_NET_PLUGIN": "mesh"})
    assert mesh["nccl_why"] == "NCCL's network is the mesh plugin, which picks its NICs itself"


def test_cluster_notes_group_equal_nodes_and_say_missing_nvidia_smi_once() -> None:
    results = {
        "gpu1": ran(H100),
        "gpu2": ran(H100),
        "lab1": {"rc": 127, "stdout": "", "stderr": "nvidia-smi: not found"},
        "lab2": {"rc": 127, "stdout": "", "stderr": ""},
        "bad": {
            "rc": 9,
            "stdout": "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.",
        },
    }
    hosts = list(results)
    section = affinity.cluster(results, {h: RDMA for h in hosts}, hosts)
    assert section["nodes"]["lab1"] == {"state": "absent", "reason": "no nvidia-smi"}
    notes = affinity.notes(section, hosts)
    pix = ", ".join(f"GPU{i} mlx5_{i} (PIX)" for i in range(8))
    assert notes == [
        f"gpu-nic affinity on gpu1, gpu2: {pix}; every GPU has a NIC NCCL uses"
        f" ({'NCCL_IB_HCA=' + RDMA['NCCL_IB_HCA']}) at PIX/PXB",
        "gpu-nic affinity: bad: nvidia-smi topo -m failed (rc 9: NVIDIA-SMI has failed because it couldn't"
        " communicate with the NVIDIA driver.)",
        "gpu-nic affinity: no nvidia-smi on lab1, lab2 (no GPU driver there): no GPU-to-NIC affinity",
    ]


def test_the_lab_without_gpus_reports_nothing_but_that() -> None:
    hosts = ["node1", "node2", "node3"]
    section = affinity.cluster({h: {"rc": 127} for h in hosts}, {}, hosts)
    assert section["warnings"] == []
    assert affinity.notes(section, hosts) == [
        "gpu-nic affinity: no nvidia-smi on node1, node2, node3 (no GPU driver there): no GPU-to-NIC affinity"
    ]


def test_markdown_rows_per_node_and_gpu_with_the_warnings() -> None:
    results = {"trav": ran(TRAVERSE), "lab": {"rc": 127}}
    section = affinity.cluster(results, {"trav": {"NCCL_IB_HCA": "=mlx5_2,mlx5_3"}}, ["trav", "lab"])
    text = "\n".join(affinity.markdown(section))
    assert "| trav | GPU0 | mlx5_0/mlx5_1 | NODE | no (mlx5_2/mlx5_3 SYS) |" in text
    assert "| trav | GPU2 | mlx5_2/mlx5_3 | NODE | no (mlx5_2/mlx5_3 NODE) |" in text
    assert "- warning: trav: GPU0's nearest NIC that NCCL uses" in text
    assert text.endswith("- note: no nvidia-smi on lab (no GPU driver there): no GPU-to-NIC affinity")
