"""The gate the roles share: their health settings checked up front, and every node's node_health result made
one report (train.yml's preflight, verify.yml's section), from node reports of the recorded H200 outputs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils.node.health import gate, node

from .conftest import HEALTH, SMI_XML, edit_gpu, thresholds

HOSTS = ["node1", "node2", "node3"]
ECC = ("<dram_uncorrectable>0</dram_uncorrectable>", "<dram_uncorrectable>2</dram_uncorrectable>")


def node_result(tmp_path: Path, name: str, smi: str = SMI_XML, **limits: Any) -> dict[str, Any]:
    """What the node_health task registers on NAME: the report of node.run over recorded outputs."""
    folder = tmp_path / f"{name}-{len(list(tmp_path.iterdir()))}"
    folder.mkdir()
    files = {
        "nvidia_smi": smi,
        "kernel_log": (HEALTH / "dmesg-nvrm.h200x4.txt").read_text(),
        "chronyc": (HEALTH / "chronyc-tracking.synced.txt").read_text(),
        "meminfo": "MemTotal:       24683656 kB\nMemAvailable:   24093672 kB\n",
        "boot_id": "9802b0f4-f209-4f01-af35-a3912bd34297\n",
    }
    sources = {}
    for key, text in files.items():
        (folder / key).write_text(text)
        sources[key] = str(folder / key)
    report, _state = node.run(
        name,
        thresholds(gpu_count=4, gpu_dcgm_level=0, **limits),
        sysfs_root=str(folder / "sys"),
        checkpoint_dir=str(folder),
        sources=sources,
        now=1000.0,
    )
    return {"changed": False, "health": report}


@pytest.fixture
def healthy(tmp_path: Path) -> dict[str, Any]:
    return {h: node_result(tmp_path, h) for h in HOSTS}


def test_settings_errors_name_the_role_variable_and_the_value() -> None:
    assert gate.settings_errors("train_health", "fail", {}, {}, {}) == []
    errors = gate.settings_errors(
        "train_health",
        "maybe",
        {"gpu_cont": 8, "host_disk_free_min_gib": "lots"},
        {"gpu.ecc": "fail", "host.clock_sync": "loud"},
        "x.xml",
    )
    assert errors[0] == "train_health: 'maybe' must be one of fail, warn, off"
    assert any(e.startswith("train_health_thresholds: unknown threshold 'gpu_cont'") for e in errors)
    assert "train_health_thresholds: host_disk_free_min_gib: 'lots' is a str, expected int or float" in errors
    assert any(e.startswith("train_health_severity: unknown check 'gpu.ecc'") for e in errors)
    assert "train_health_severity.host.clock_sync: 'loud' must be one of fail, warn, off" in errors
    assert "train_health_sources: 'x.xml' must be a dict of source: file" in errors
    assert gate.settings_errors("verify_health", "off", [], {}, None) == [
        "verify_health_thresholds: [] must be a dict of thresholds"
    ]


def test_healthy_nodes_pass_in_one_report(healthy: dict[str, Any]) -> None:
    out = gate.evaluate(healthy, HOSTS, "fail")
    assert out["ok"] and out["errors"] == [] and out["missing"] == []
    assert sorted(out["summary"]["nodes"]) == HOSTS and out["summary"]["counts"] == {"fail": 0, "warn": 0}


def test_a_failing_node_is_named_with_check_value_and_threshold(tmp_path: Path, healthy: dict) -> None:
    healthy["node2"] = node_result(tmp_path, "node2", smi=edit_gpu(SMI_XML, 1, *ECC))
    out = gate.evaluate(healthy, HOSTS, "fail")
    assert not out["ok"] and out["summary"]["failed_nodes"] == ["node2"]
    assert out["errors"] == [
        "node2: gpu.ecc_volatile [fail] GPU 1 (00000000:00:07.0): 2 uncorrectable ECC errors "
        "(volatile, since the driver loaded) (value 2, threshold 0)"
    ]
    warned = gate.evaluate(healthy, HOSTS, "warn")
    assert warned["errors"] == [] and warned["warnings"] == out["errors"]
    # the severity the nodes ran with applies across nodes too; "off" for the check itself drops it
    assert gate.evaluate(healthy, HOSTS, "fail", {"cluster.driver_version": "off"})["errors"] == out["errors"]


def test_disk_threshold_above_what_the_node_has(tmp_path: Path, healthy: dict) -> None:
    healthy["node3"] = node_result(tmp_path, "node3", host_disk_free_min_gib=10**6)
    out = gate.evaluate(healthy, HOSTS, "fail")
    (line,) = out["errors"]
    assert line.startswith("node3: host.disk_free [fail] ") and line.endswith("threshold >= 1e+06 GiB)")


def test_driver_versions_compared_across_nodes(tmp_path: Path, healthy: dict) -> None:
    older = SMI_XML.replace("<driver_version>580.159.04<", "<driver_version>570.86.15<")
    healthy["node3"] = node_result(tmp_path, "node3", smi=older)
    out = gate.evaluate(healthy, HOSTS, "fail")
    assert any(
        e.startswith("node3: cluster.driver_version [fail] driver version: driver version 570.86.15 differs")
        and e.endswith("(value 570.86.15, threshold 580.159.04)")
        for e in out["errors"]
    )


def test_nodes_whose_checks_did_not_run(healthy: dict[str, Any]) -> None:
    healthy["node2"] = {"failed": True, "msg": "node_health: unknown threshold 'x'\nmore"}
    healthy["node3"] = {"unreachable": True, "msg": "ssh: connect timed out"}
    out = gate.evaluate(healthy, HOSTS, "fail")
    assert out["errors"] == [
        "node2: node health the checks did not run: node_health: unknown threshold 'x'",
        "node3: node health unreachable (ssh: connect timed out)",
    ]
    # train.yml's preflight names an unreachable node itself
    named = gate.evaluate(healthy, HOSTS, "fail", unreachable_named_elsewhere=True)
    assert named["missing"] == ["node2"]


def test_markdown_section(tmp_path: Path, healthy: dict) -> None:
    healthy["node3"] = {"failed": True, "msg": "boom"}
    text = "\n".join(gate.markdown(gate.evaluate(healthy, HOSTS, "fail")))
    assert "## Node health" in text and "| node1 | ok |" in text
    assert "| node3 | not checked: the checks did not run: boom | 0 | 0 |" in text
