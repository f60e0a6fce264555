"""``nvidia-smi topo -m`` read into GPUs, NICs and relations (module_utils/nccl/topo.py), on real outputs of
4-NIC and 8-NIC servers in both formats (tests/unit/fixtures/nvidia-smi-topo/SOURCES.md)."""

from __future__ import annotations

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils.nccl import topo

from ...conftest import FIXTURE_DIR

TOPO = FIXTURE_DIR / "nvidia-smi-topo"


def read(name: str) -> topo.Topology:
    return topo.parse((TOPO / name).read_text())


def test_new_format_with_a_nic_legend_and_gpu_numa_id() -> None:
    t = read("asus-esc8000a-e12-4gpu-4nic.txt")
    assert t.gpus == ["GPU0", "GPU1", "GPU2", "GPU3"]
    assert t.nics == {"NIC0": "mlx5_0", "NIC1": "mlx5_1", "NIC2": "mlx5_2", "NIC3": "mlx5_3"}
    assert t.cells["GPU0"] == {"NIC0": "NODE", "NIC1": "NODE", "NIC2": "SYS", "NIC3": "SYS"}
    assert t.cells["GPU3"] == {"NIC0": "SYS", "NIC1": "SYS", "NIC2": "NODE", "NIC3": "NODE"}
    assert t.cpu_affinity == {"GPU0": "0-31", "GPU1": "0-31", "GPU2": "32-63", "GPU3": "32-63"}
    assert t.numa_affinity == {"GPU0": "0", "GPU1": "0", "GPU2": "1", "GPU3": "1"}


def test_eight_gpus_each_on_its_own_nic() -> None:
    t = read("h100x8-8nic-sglang-issue-30401.txt")
    assert len(t.gpus) == 8 and list(t.nics.values()) == [f"mlx5_{i}" for i in range(8)]
    for i, gpu in enumerate(t.gpus):
        assert [nic for nic, rel in t.cells[gpu].items() if rel == "PIX"] == [f"NIC{i}"]
    assert t.cpu_affinity["GPU4"] == "48-95,144-191" and t.numa_affinity["GPU7"] == "1"


def test_old_format_names_the_nics_in_the_header_and_separates_cells_by_tabs() -> None:
    text = (TOPO / "traverse-4gpu-4nic-tabs.txt").read_text()
    assert "\t" in text and "NIC Legend" not in text
    t = topo.parse(text)
    assert t.nics == {f"mlx5_{i}": f"mlx5_{i}" for i in range(4)}
    assert t.cells["GPU2"] == {"mlx5_0": "SYS", "mlx5_1": "SYS", "mlx5_2": "NODE", "mlx5_3": "NODE"}
    assert t.numa_affinity == {"GPU0": "0", "GPU1": "0", "GPU2": "8", "GPU3": "8"}


def test_the_header_underline_of_a_terminal_is_ignored() -> None:
    text = (TOPO / "asus-esc8000a-e12-4gpu-4nic.txt").read_text()
    underlined = text.replace("GPU0    GPU1", "\x1b[4mGPU0    GPU1", 1)
    underlined = underlined.replace("GPU NUMA ID", "GPU NUMA ID\x1b[0m", 1)
    assert topo.parse(underlined) == topo.parse(text)


def test_relations_rank_nearest_first_and_the_old_soc_is_sys() -> None:
    assert [topo.rank(r) for r in ("PIX", "PXB", "PHB", "NODE", "SYS", "SOC", "NV18")] == [
        0,
        1,
        2,
        3,
        4,
        4,
        5,
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.", "no matrix header"),
        ("\tGPU0\tNIC0\tCPU Affinity\nGPU0\t X \tPIX\t0-7\n", "NIC0 not named in a 'NIC Legend:' section"),
        ("\tGPU0\tmlx5_0\tCPU Affinity\nGPU0\t X \n", "row GPU0 has 1 cells for 2 columns"),
        ("\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tNV1\t0-7\n", "no row for GPU1 under the header"),
    ],
)
def test_text_that_is_not_the_matrix_is_named(text: str, message: str) -> None:
    with pytest.raises(topo.TopoError, match=message):
        topo.parse(text)
