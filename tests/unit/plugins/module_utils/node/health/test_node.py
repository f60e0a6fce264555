"""node.run: all checks on one node from the recorded outputs, the counter baseline, Xid acknowledgement."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils.node.health import node

from .conftest import HEALTH, SMI_XML, edit_gpu, thresholds
from .test_rdma import write_counters

XID_79 = "[  512.000001] NVRM: Xid (PCI:0000:00:08): 79, pid=0, GPU has fallen off the bus.\n"


@pytest.fixture
def box(tmp_path: Path, sysfs_copy):
    """A node made of the recorded H200 outputs and a copy of the mlx5_roce sysfs tree with counters."""
    root = sysfs_copy("mlx5_roce")
    write_counters(root, "mlx5_0", {"symbol_error": 0, "link_downed": 0, "port_rcv_errors": 0})
    files = {
        "nvidia_smi": SMI_XML,
        "kernel_log": (HEALTH / "dmesg-nvrm.h200x4.txt").read_text(),
        "dcgmi": (HEALTH / "dcgmi-diag-r1.dcgm4.pass.json").read_text(),
        "chronyc": (HEALTH / "chronyc-tracking.synced.txt").read_text(),
        "meminfo": "MemTotal:       24683656 kB\nMemAvailable:   24093672 kB\n",
        "boot_id": "9802b0f4-f209-4f01-af35-a3912bd34297\n",
        "ethtool:ens1f0np0": (HEALTH / "ethtool-S.mlx5.txt").read_text(),
    }
    sources = {}
    for key, text in files.items():
        path = tmp_path / key.replace(":", "_")
        path.write_text(text)
        sources[key] = str(path)

    return Box(root, sources, str(tmp_path / "ckpt"))


class Box:
    def __init__(self, sysfs: Path, sources: dict[str, str], checkpoint_dir: str) -> None:
        self.sysfs = sysfs
        self.sources = sources
        self.checkpoint_dir = checkpoint_dir

    def set(self, key: str, text: str) -> None:
        Path(self.sources[key]).write_text(text)

    def run(self, state: dict | None = None, now: float = 1000.0, **overrides: object) -> tuple[dict, dict]:
        limits = thresholds(gpu_count=4, rdma_ports=["mlx5_0"], rdma_rate_gbps=100, **overrides)
        return node.run(
            "node1",
            limits,
            sysfs_root=str(self.sysfs),
            checkpoint_dir=self.checkpoint_dir,
            state=state,
            sources=self.sources,
            now=now,
        )


def test_healthy_node_passes_every_check(box) -> None:
    report, state = box.run(host_disk_free_min_gib=0)
    assert report["ok"] and report["findings"] == []
    assert report["checks"]["gpu.dcgm_diag"] == "pass" and report["checks"]["gpu.xid"] == "pass"
    assert report["checks"]["rdma.counter"] == "skipped: first check, baseline recorded"
    assert not [c for c, s in report["checks"].items() if s not in ("pass",) and not s.startswith("skipped")]
    assert report["facts"]["driver_version"] == "580.159.04" and report["facts"]["gpu_count"] == 4
    assert report["facts"]["rdma_ports"][0]["rate"] == "100 Gb/sec (4X EDR)"
    assert state["counters"] == {"mlx5_0/1": {"symbol_error": 0, "link_downed": 0, "port_rcv_errors": 0}}
    assert state["pause"]["ens1f0np0"]["rx_prio3_pause"] == 1200


def test_counters_compare_with_the_last_check_of_the_same_boot(box, tmp_path: Path) -> None:
    _report, state = box.run(host_disk_free_min_gib=0)
    path = tmp_path / "state" / "health.json"
    node.save_state(str(path), state)
    write_counters(box.sysfs, "mlx5_0", {"link_downed": 3})
    report, _state = box.run(node.load_state(str(path)), now=1300.0, host_disk_free_min_gib=0)
    (f,) = report["findings"]
    assert (f["check"], f["subject"], f["value"], f["severity"]) == (
        "rdma.counter",
        "mlx5_0/1 link_downed",
        "+3",
        "fail",
    )
    assert not report["ok"]
    # After a reboot the old snapshot is no baseline.
    state["boot_id"] = "another-boot"
    report, _state = box.run(state, now=1300.0, host_disk_free_min_gib=0)
    assert report["ok"] and report["checks"]["rdma.counter"].startswith("skipped")


def test_xid_acknowledged_after_a_gpu_reset(box) -> None:
    box.set("kernel_log", (HEALTH / "dmesg-nvrm.h200x4.txt").read_text() + XID_79)
    report, state = box.run(host_disk_free_min_gib=0)
    assert [f["value"] for f in report["findings"]] == ["Xid 79 x1"]
    state, count = node.ack_xids(state, box.sources)
    assert count == 1
    report, state = box.run(state, host_disk_free_min_gib=0)
    assert report["findings"] == []
    box.set(
        "kernel_log", (HEALTH / "dmesg-nvrm.h200x4.txt").read_text() + XID_79 + XID_79.replace("512.", "900.")
    )
    report, _state = box.run(state, host_disk_free_min_gib=0)
    assert [f["value"] for f in report["findings"]] == ["Xid 79 x1"]


def test_faults_from_several_sources_at_once(box) -> None:
    box.set("nvidia_smi", edit_gpu(SMI_XML, 2, "<current_link_width>16x<", "<current_link_width>4x<"))
    box.set(
        "chronyc",
        (HEALTH / "chronyc-tracking.synced.txt").read_text().replace(": Normal", ": Not synchronised"),
    )
    (box.sysfs / "class/infiniband/mlx5_0/ports/1/rate").write_text("50 Gb/sec (2X EDR)\n")
    report, _state = box.run(host_disk_free_min_gib=10**9)
    got = {(f["check"], f["severity"]) for f in report["findings"]}
    assert got == {
        ("gpu.pcie_width", "fail"),
        ("host.clock_sync", "warn"),
        ("rdma.rate", "fail"),
        ("host.disk_free", "fail"),
    }
    assert report["checks"]["gpu.pcie_width"] == "fail" and report["checks"]["host.clock_sync"] == "warn"


def test_no_nvidia_smi(box, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    sources = {k: v for k, v in box.sources.items() if k != "nvidia_smi"}
    limits = thresholds(gpu_count=4, rdma_ports="none")
    report, _state = node.run("node1", limits, sources=sources, sysfs_root=str(tmp_path))
    (f,) = report["findings"]
    assert (f["check"], f["value"], f["severity"]) == ("gpu.tools", "nvidia-smi not found", "fail")
    report, _state = node.run("node1", thresholds(), sources=sources, sysfs_root=str(tmp_path))
    assert report["ok"] and report["checks"]["gpu.count"] == "skipped: nvidia-smi not found"


def test_severity_off_skips_a_check(box) -> None:
    box.set("nvidia_smi", edit_gpu(SMI_XML, 0, "<persistence_mode>Enabled<", "<persistence_mode>Disabled<"))
    limits = thresholds(gpu_count=4, host_disk_free_min_gib=0, rdma_ports="none")
    report, _state = node.run(
        "node1", limits, {"gpu.persistence_mode": "off"}, sources=box.sources, sysfs_root=str(box.sysfs)
    )
    assert report["findings"] == [] and report["checks"]["gpu.persistence_mode"] == "skipped: severity off"
