# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Across nodes: the driver and CUDA versions every node reports must be the same (NCCL and the trainer's
CUDA build expect one stack), and the one report a launch gate or verify.yml shows for all nodes."""

from __future__ import annotations

from collections import Counter
from typing import Any

from .findings import CHECKS, FAIL, OFF, WARN, line


def version_findings(
    reports: list[dict[str, Any]], severity: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """One finding per node whose driver (or CUDA) version differs from the version most nodes have.

    Nodes without GPUs (no version) are left out. On a tie the highest version counts as the reference, so the
    nodes named are the ones to upgrade.
    """
    overrides = severity or {}
    findings = []
    for field, check in (
        ("driver_version", "cluster.driver_version"),
        ("cuda_version", "cluster.cuda_version"),
    ):
        level = overrides.get(check) or CHECKS[check]
        if level == OFF:
            continue
        seen = {r["node"]: r.get("facts", {}).get(field) for r in reports}
        seen = {node: v for node, v in seen.items() if v}
        if len(set(seen.values())) < 2:
            continue
        counts = Counter(seen.values())
        top = max(counts.values())
        reference = max((v for v, n in counts.items() if n == top), key=_version_key)
        others = ", ".join(f"{v} on {n}" for v, n in sorted(counts.items()) if v != reference)
        for node, version in sorted(seen.items()):
            if version != reference:
                findings.append(
                    {
                        "node": node,
                        "check": check,
                        "subject": field.replace("_", " "),
                        "value": version,
                        "threshold": reference,
                        "severity": level,
                        "message": f"{field.replace('_', ' ')} {version} differs from {reference} "
                        f"({counts[reference]} nodes; others: {others} nodes)",
                    }
                )
    return findings


def expected_gpus(gres: str | None) -> int:
    """GPUs a Slurm Gres string declares: "gpu:8", "gpu:h100:8", "gpu:h100:4(S:0),gpu:a100:2" -> 8, 8, 6."""
    total = 0
    for item in (gres or "").split(","):
        parts = item.split("(")[0].strip().split(":")
        if parts[0] == "gpu":
            total += int(parts[-1]) if len(parts) > 1 and parts[-1].isdigit() else 1
    return total


def _version_key(text: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else -1 for p in text.split("."))


def summarize(reports: list[dict[str, Any]], severity: dict[str, str] | None = None) -> dict[str, Any]:
    """All nodes' findings plus the cross-node ones: {ok, failed_nodes, findings, counts, lines, nodes}."""
    findings = [f for r in reports for f in r.get("findings", [])] + version_findings(reports, severity)
    failed_nodes = sorted({f["node"] for f in findings if f["severity"] == FAIL})
    return {
        "ok": not failed_nodes,
        "failed_nodes": failed_nodes,
        "findings": findings,
        "counts": {
            FAIL: sum(f["severity"] == FAIL for f in findings),
            WARN: sum(f["severity"] == WARN for f in findings),
        },
        "lines": [
            line(f) for f in sorted(findings, key=lambda f: (f["severity"] != FAIL, f["node"], f["check"]))
        ],
        "nodes": {r["node"]: {"ok": r.get("ok"), "checks": r.get("checks", {})} for r in reports},
    }
