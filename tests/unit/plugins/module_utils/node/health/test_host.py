"""Host checks: memory, checkpoint disk, clock sync; thresholds and severities; the cross-node report."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils.node.health import cluster, host
from ansible_collections.rdmaops.cluster.plugins.module_utils.node.health.findings import (
    merge_thresholds,
    severity_errors,
)

from .conftest import HEALTH, brief, collect, thresholds

CHRONY = (HEALTH / "chronyc-tracking.synced.txt").read_text()
TIMEDATECTL = (HEALTH / "timedatectl-show.synced.txt").read_text()
MEMINFO = (
    "MemTotal:       24683656 kB\nMemFree:        22655612 kB\nMemAvailable:   24093672 kB\n"
    "HugePages_Total:       0\n"
)


def test_memory() -> None:
    info = host.parse_meminfo(MEMINFO)
    assert info["MemTotal"] == 24683656 * 1024 and info["HugePages_Total"] == 0
    assert collect(host.check_memory, info, thresholds()) == []
    low = host.parse_meminfo(MEMINFO.replace("24093672", "600000"))
    (f,) = collect(host.check_memory, low, thresholds())
    assert brief(f) == ("host.mem_available", "2.4%", ">= 5%", "fail")


def test_disk_free_for_a_checkpoint_dir_not_made_yet(tmp_path: Path) -> None:
    target = str(tmp_path / "ckpt" / "run1")
    free = host.free_bytes(target)
    assert host.existing_parent(target) == str(tmp_path)
    assert collect(host.check_disk, target, free, thresholds(host_disk_free_min_gib=0)) == []
    (f,) = collect(host.check_disk, target, free, thresholds(host_disk_free_min_gib=10**9))
    assert f["check"] == "host.disk_free" and f["subject"] == target and f["threshold"] == ">= 1e+09 GiB"


def test_clock_sync_chrony_and_timedatectl() -> None:
    assert host.parse_chrony_tracking(CHRONY)["offset_s"] == pytest.approx(-0.000006523)
    assert collect(host.check_clock, CHRONY, None, thresholds()) == []
    (f,) = collect(
        host.check_clock,
        CHRONY.replace("Leap status     : Normal", "Leap status     : Not synchronised"),
        None,
        thresholds(),
    )
    assert (f["value"], f["severity"]) == ("Not synchronised", "warn")
    far = CHRONY.replace("0.000006523 seconds slow", "2.500000000 seconds fast")
    (f,) = collect(host.check_clock, far, None, thresholds())
    assert f["value"] == "+2.500000 s" and f["threshold"] == "<= 0.1 s"
    assert collect(host.check_clock, None, TIMEDATECTL, thresholds()) == []
    (f,) = collect(
        host.check_clock,
        None,
        TIMEDATECTL.replace("NTPSynchronized=yes", "NTPSynchronized=no"),
        thresholds(),
        severity={"host.clock_sync": "fail"},
    )
    assert (f["value"], f["severity"]) == ("NTPSynchronized=no", "fail")
    (f,) = collect(host.check_clock, None, None, thresholds())
    assert "neither chronyc nor timedatectl" in f["message"]


def test_threshold_and_severity_errors_name_the_bad_value() -> None:
    _merged, errors = merge_thresholds(
        {
            "gpu_count": "8",
            "rdma_rate_gbps": -1,
            "gpu_persistence_mode": 1,
            "nope": 1,
            "rdma_ports": "some",
            "rdma_counters": {"symbol_error": {"max_growth": -1, "severity": "loud"}},
        }
    )
    text = " | ".join(errors)
    for needle in (
        "gpu_count: '8' is a str",
        "rdma_rate_gbps: -1 is negative",
        "gpu_persistence_mode: 1",
        "unknown threshold 'nope'",
        "rdma_ports: 'some'",
        "max_growth: -1",
        "severity: 'loud'",
    ):
        assert needle in text
    assert severity_errors({"gpu.xid": "loud", "gpu.nope": "off"}) == [
        "severity.gpu.xid: 'loud' must be one of fail, warn, off",
        "severity: unknown check 'gpu.nope' (known: "
        + severity_errors({"gpu.nope": "off"})[0].split("(known: ")[1],
    ]


def report(node: str, driver: str | None, cuda: str | None, findings: list | None = None) -> dict:
    return {
        "node": node,
        "ok": True,
        "findings": findings or [],
        "checks": {},
        "facts": {"driver_version": driver, "cuda_version": cuda},
    }


def test_versions_must_match_across_nodes() -> None:
    reports = [
        report("n1", "580.159.04", "13.0"),
        report("n2", "580.159.04", "13.0"),
        report("n3", "575.51.03", "12.9"),
        report("cpu1", None, None),
    ]
    found = cluster.version_findings(reports)
    assert [(f["node"], f["check"], f["value"], f["threshold"]) for f in found] == [
        ("n3", "cluster.driver_version", "575.51.03", "580.159.04"),
        ("n3", "cluster.cuda_version", "12.9", "13.0"),
    ]
    # On a tie the newer version is the reference: the node named is the one to upgrade.
    (tie,) = cluster.version_findings(reports[1:3], {"cluster.cuda_version": "off"})
    assert tie["node"] == "n3"
    assert cluster.version_findings(reports[:2]) == []


def test_summary_names_node_check_value_threshold() -> None:
    bad = {
        "node": "n2",
        "check": "gpu.ecc_volatile",
        "subject": "GPU 0 (00000000:00:06.0)",
        "value": 2,
        "threshold": 0,
        "severity": "fail",
        "message": "2 uncorrectable ECC errors",
    }
    summary = cluster.summarize(
        [report("n1", "580.159.04", "13.0"), report("n2", "580.159.04", "13.0", [bad])]
    )
    assert (
        not summary["ok"]
        and summary["failed_nodes"] == ["n2"]
        and summary["counts"] == {"fail": 1, "warn": 0}
    )
    assert summary["lines"] == [
        "n2: gpu.ecc_volatile [fail] GPU 0 (00000000:00:06.0): 2 uncorrectable ECC errors "
        "(value 2, threshold 0)"
    ]


def test_expected_gpus_from_slurm_gres() -> None:
    assert cluster.expected_gpus("gpu:8") == 8
    assert cluster.expected_gpus("gpu:h100:8") == 8
    assert cluster.expected_gpus("gpu:h100:4(S:0),gpu:a100:2,shard:16") == 6
    assert cluster.expected_gpus("") == 0 and cluster.expected_gpus(None) == 0
