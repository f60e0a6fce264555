"""verify_report: the report document, its Markdown, the heatmap and the written files."""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.nccl import affinity
from ansible_collections.rdmaops.cluster.plugins.module_utils.node.health import gate as health_gate
from ansible_collections.rdmaops.cluster.plugins.module_utils.verify import report as vr
from ansible_collections.rdmaops.cluster.plugins.module_utils.verify.thresholds import thresholds

from ...conftest import FIXTURE_DIR
from .conftest import measurement


def test_median_line_rate_catches_the_outlier() -> None:
    hosts = ["a", "b", "c"]
    rows = [
        measurement(x, y, 0.2 if (x, y) == ("a", "b") else 4.0 + i / 10)
        for i, (x, y) in enumerate(itertools.permutations(hosts, 2))
    ]
    limits = thresholds(0.5, None, None, "median")
    report = vr.build_report(hosts, rows, limits)
    # Median of 0.2, 4.1, 4.2, 4.3, 4.4, 4.5.
    assert report["line_rate_gbps"] == 4.25
    assert report["failures"] == ["a:data1 -> b:data0 0.20 Gb/s < 0.5 x 4.25 Gb/s (= 2.12 Gb/s)"]
    assert all(r["line_rate_gbps"] == 4.25 for r in report["measurements"])
    assert "Median of this run's links, used as every link's line rate: 4.25 Gb/s." in vr.markdown(report)


def sample_report(slow: bool = False) -> dict[str, Any]:
    hosts = ["node1", "node2", "node3"]
    rows = [
        measurement(a, b, 0.19 if slow and (a, b) == ("node1", "node2") else 9.0)
        for a, b in itertools.permutations(hosts, 2)
    ]
    collective = {
        "backend": "gloo",
        "world_size": 3,
        "dtype": "float32",
        "iters": 10,
        "results": [{"bytes": 1 << 20, "time_ms": 2.0, "algbw_gbps": 4.19, "busbw_gbps": 5.59}],
    }
    gate = {h: {"available": False, "summary": "no RDMA device", "failures": []} for h in hosts}
    return vr.build_report(
        hosts,
        rows,
        thresholds(0.5, None, None, None, 20.0),
        meta={"mode": "tcp", "topology": "mesh", "rounds": 6, "timestamp": "20261122T070000Z"},
        gate=gate,
        reachability={
            "node1": [{"ok": True}, {"ok": False, "error": "node2 node address 10.255.0.2: DF ping failed"}]
        },
        collective=collective,
    )


def test_build_report_collects_every_failure() -> None:
    report = sample_report(slow=True)
    assert report["passed"] is False
    assert report["failures"] == [
        "node1 -> node2 node address 10.255.0.2: DF ping failed",
        "node1:data1 -> node2:data0 0.19 Gb/s < 0.5 x 10 Gb/s (= 5.00 Gb/s)",
        "all-reduce (gloo, 3 ranks) peak bus bandwidth 5.59 Gb/s < floor 20 Gb/s",
    ]
    row = report["measurements"][0]
    assert (row["client"], row["server"], row["fraction_of_line_rate"], row["passed"]) == (
        "node1",
        "node2",
        0.019,
        False,
    )
    grid = vr.matrix(report)
    assert grid[0][0] is None and grid[0][1] == 0.19 and grid[1][0] == 9.0
    text = vr.markdown(report)
    assert "**FAILED**" in text and "| node1:data1 -> node2:data0 | 0.19 | 10 | 2% |" in text
    assert "| 1 MiB | 2.000 | 4.190 | 5.590 |" in text
    json.dumps(report)
    report["meta"]["check_mode"] = True
    assert "**CHECK MODE, nothing measured**" in vr.markdown(report)


def test_health_section_and_its_failures() -> None:
    hosts = ["node1", "node2", "node3"]
    ecc = {
        "node": "node2",
        "check": "gpu.ecc_volatile",
        "subject": "GPU 1 (00000000:00:07.0)",
        "value": 2,
        "threshold": 0,
        "severity": "fail",
        "message": "2 uncorrectable ECC errors (volatile, since the driver loaded)",
    }
    results: dict[str, Any] = {
        h: {"health": {"node": h, "ok": True, "findings": [], "checks": {"gpu.ecc_volatile": "pass"}}}
        for h in hosts
    }
    results["node2"]["health"].update(ok=False, findings=[ecc], checks={"gpu.ecc_volatile": "fail"})
    line = (
        "node2: gpu.ecc_volatile [fail] GPU 1 (00000000:00:07.0): 2 uncorrectable ECC errors "
        "(volatile, since the driver loaded) (value 2, threshold 0)"
    )
    failing = vr.build_report(hosts, [], {}, health=health_gate.evaluate(results, hosts, "fail"))
    assert failing["failures"] == [f"health: {line}"]
    assert failing["health"]["summary"]["failed_nodes"] == ["node2"]
    text = vr.markdown(failing)
    assert "## Node health" in text and "| node2 | FAIL | 1 | 0 |" in text and f"- {line}" in text
    warned = vr.build_report(hosts, [], {}, health=health_gate.evaluate(results, hosts, "warn"))
    assert warned["passed"] and warned["health"]["warnings"] == [line]
    json.dumps(failing)
    assert "## Node health" not in vr.markdown(vr.build_report(hosts, [], {}))


def test_gpu_to_nic_affinity_section_warns_and_does_not_fail() -> None:
    """A real 8-NIC output with NCCL told to use the first socket's NICs only: the far GPUs are warned about
    in the JSON and the Markdown, and the report still passes."""
    hosts = ["gpu1", "lab1"]
    smi = (FIXTURE_DIR / "nvidia-smi-topo" / "h100x8-8nic-sglang-issue-30401.txt").read_text()
    section = affinity.cluster(
        {"gpu1": {"rc": 0, "stdout": smi}, "lab1": {"rc": 127}},
        {"gpu1": {"NCCL_IB_HCA": "=" + ",".join(f"mlx5_{i}:1" for i in range(4))}},
        hosts,
    )
    report = vr.build_report(hosts, [], {}, affinity=section)
    assert report["passed"] and len(report["gpu_nic_affinity"]["warnings"]) == 4
    text = vr.markdown(report)
    assert "## GPU-to-NIC affinity" in text and "| gpu1 | GPU0 | mlx5_0 | PIX | yes (mlx5_0 PIX) |" in text
    assert "| gpu1 | GPU4 | mlx5_4 | PIX | no (mlx5_0/mlx5_1/mlx5_2/mlx5_3 SYS) |" in text
    assert "- note: no nvidia-smi on lab1 (no GPU driver there): no GPU-to-NIC affinity" in text
    json.dumps(report)
    assert "## GPU-to-NIC affinity" not in vr.markdown(vr.build_report(hosts, [], {}))


def test_write_report_files_and_latest_link(tmp_path: Path) -> None:
    first = vr.write_report(sample_report(), str(tmp_path / "verify-1"), str(tmp_path / "latest"))
    second = vr.write_report(sample_report(slow=True), str(tmp_path / "verify-2"), str(tmp_path / "latest"))
    assert os.readlink(tmp_path / "latest") == "verify-2"
    assert json.loads(Path(second["json"]).read_text())["passed"] is False
    assert Path(first["markdown"]).read_text().startswith("# Fabric verification 20261122T070000Z")
    png = Path(second["heatmap"]).read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 10_000


def rails_report() -> dict[str, Any]:
    """3 nodes x 2 NICs on rails: every pair measured on each rail (rail1 slow from node1 to node2)."""
    hosts = ["node1", "node2", "node3"]
    rows = []
    for k in (0, 1):
        for a, b in itertools.permutations(hosts, 2):
            row = measurement(a, b, 2.0 if (k, a, b) == (1, "node1", "node2") else 9.0 + k)
            row.update(
                rail=f"rail{k}",
                client_ifname=f"data{k}",
                server_ifname=f"data{k}",
                label=f"{a}:data{k} -> {b}:data{k}",
            )
            rows.append(row)
    return vr.build_report(
        hosts, rows, thresholds(0.5, None, None, None), meta={"topology": "switched", "mode": "tcp"}
    )


def test_rails_have_one_matrix_each_and_the_slow_nic_is_named() -> None:
    report = rails_report()
    assert vr.rail_names(report) == ["rail0", "rail1"]
    # each rail's cell holds its own NIC's figure (not the last rail's)
    assert vr.matrix(report, "gbps", "rail0")[0][1] == 9.0
    assert vr.matrix(report, "gbps", "rail1")[0][1] == 2.0
    assert report["failures"] == ["node1:data1 -> node2:data1 2.00 Gb/s < 0.5 x 10 Gb/s (= 5.00 Gb/s)"]
    text = vr.markdown(report)
    assert "## Bandwidth per rail (Gb/s, sender row, receiver column)" in text
    assert "### rail0" in text and "### rail1" in text
    assert "| node1 (data1) | - | 2.00 FAIL | 10.00 |" in text
    assert "| node1 (data0) | - | 9.00 | 9.00 |" in text
    # a fabric without rails keeps its one table
    assert "## Bandwidth per rail" not in vr.markdown(sample_report())


def test_write_report_draws_one_heatmap_per_rail(tmp_path: Path) -> None:
    paths = vr.write_report(rails_report(), str(tmp_path / "verify-rails"))
    assert [Path(p).name for p in paths["heatmaps"]] == ["bandwidth-rail0.png", "bandwidth-rail1.png"]
    assert paths["heatmap"] == paths["heatmaps"][0]
    for path in paths["heatmaps"]:
        assert Path(path).read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert not (tmp_path / "verify-rails" / "bandwidth.png").exists()


def test_a_path_on_its_backup_route_is_reported_degraded() -> None:
    note = "node3 node address 10.255.0.3 answers over its backup route (node1 -> node2 -> node3, via data0)"
    reach = {"node1": [{"ok": True}, {"ok": True, "degraded": True, "note": note}]}
    report = vr.build_report(["node1", "node2", "node3"], [], {}, reachability=reach)
    assert report["passed"]
    text = vr.markdown(report)
    assert "2/2 paths OK" in text
    assert "1 of them DEGRADED, on a backup route around a cable that is out" in text
    assert f"- node1 -> {note}" in text
