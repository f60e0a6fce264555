"""The node_health module end to end on the recorded H200 outputs (arguments, check mode, fail=true)."""

from __future__ import annotations

from pathlib import Path

from ansible_collections.rdmaops.cluster.plugins.modules import node_health

from ..conftest import FIXTURE_DIR as FIXTURES
from ..conftest import RunModule

HEALTH = FIXTURES / "health"


def args(tmp_path: Path, smi: str | None = None, **extra: object) -> dict:
    boot = tmp_path / "boot_id"
    boot.write_text("9802b0f4-f209-4f01-af35-a3912bd34297\n")
    xml = HEALTH / "nvidia-smi-q-x.h200x4.xml"
    if smi is not None:
        xml = tmp_path / "smi.xml"
        xml.write_text(smi)
    base = {
        "node": "node1",
        "thresholds": {
            "gpu_count": 4,
            "rdma_ports": ["mlx5_0"],
            "gpu_dcgm_level": 0,
            "host_disk_free_min_gib": 0,
        },
        "sysfs_root": str(FIXTURES / "sysfs" / "mlx5_roce"),
        "checkpoint_dir": str(tmp_path / "ckpt"),
        "state_file": str(tmp_path / "state" / "health.json"),
        "sources": {
            "nvidia_smi": str(xml),
            "kernel_log": str(HEALTH / "dmesg-nvrm.h200x4.txt"),
            "chronyc": str(HEALTH / "chronyc-tracking.synced.txt"),
            "boot_id": str(boot),
        },
    }
    base.update(extra)
    return base


def test_healthy_node_and_state_file(run_module: RunModule, tmp_path: Path) -> None:
    out = run_module(node_health, **args(tmp_path), _ansible_check_mode=True)
    assert out["changed"] is False and not out.get("failed")
    health = out["health"]
    assert health["ok"] and health["node"] == "node1" and health["findings"] == []
    assert health["facts"]["driver_version"] == "580.159.04"
    assert not (tmp_path / "state").exists()  # check mode leaves the baseline as it was
    out = run_module(node_health, **args(tmp_path))
    assert out["changed"] is False and (tmp_path / "state" / "health.json").is_file()


def test_fail_true_lists_every_failing_check(run_module: RunModule, tmp_path: Path) -> None:
    smi = (HEALTH / "nvidia-smi-q-x.h200x4.xml").read_text()
    smi = smi.replace("<remapped_row_pending>No<", "<remapped_row_pending>Yes<", 2)
    out = run_module(node_health, **args(tmp_path, smi))
    assert not out.get("failed") and not out["health"]["ok"] and len(out["health"]["findings"]) == 2
    out = run_module(node_health, **args(tmp_path, smi, fail=True))
    assert out["failed"] is True
    assert out["msg"].startswith(
        "health checks failed: node1: gpu.remap_pending [fail] GPU 0 (00000000:00:06.0)"
    )
    assert "GPU 1 (00000000:00:07.0)" in out["msg"]


def test_bad_input_is_named_before_anything_is_read(run_module: RunModule, tmp_path: Path) -> None:
    out = run_module(
        node_health,
        **args(
            tmp_path, thresholds={"gpu_cnt": 4}, severity={"host.clock_sync": "loud"}, sources={"nvsmi": "/x"}
        ),
    )
    assert out["failed"] is True
    assert "unknown threshold 'gpu_cnt'" in out["msg"]
    assert "severity.host.clock_sync: 'loud'" in out["msg"]
    assert "sources: unknown keys ['nvsmi']" in out["msg"]
