# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The health gate the roles share on the controller: their settings checked before any node changes, and
the node_health results of every node turned into one report (train.yml's preflight, verify.yml's report).

A role's mode is ``fail`` (a failing check stops the launch or fails the verification), ``warn`` (every
finding is only reported) or ``off`` (the checks do not run).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .cluster import summarize
from .findings import FAIL, line, merge_thresholds, severity_errors

MODES = ("fail", "warn", "off")

# A check phase's health settings (<role>_health_thresholds, _severity, _sources), taken raw so that
# settings_errors names a bad value; documented by the doc fragment rdmaops.cluster.health.
SETTINGS_SPEC: dict[str, Any] = {
    "health_thresholds": {"type": "raw", "default": {}},
    "health_severity": {"type": "raw", "default": {}},
    "health_sources": {"type": "raw", "default": {}},
}
# <role>_health too, where the gate is the role's own (train's preflight, verify's report); documented by
# the doc fragment rdmaops.cluster.health.mode.
MODE_SPEC: dict[str, Any] = {"health": {"type": "raw", "default": "fail"}, **SETTINGS_SPEC}


def settings_errors(prefix: str, mode: Any, thresholds: Any, severity: Any, sources: Any = None) -> list[str]:
    """Errors naming the role variable (PREFIX, e.g. 'train_health') and the bad value."""
    errors: list[str] = []
    if mode not in MODES:
        errors.append(f"{prefix}: {mode!r} must be one of {', '.join(MODES)}")
    if not isinstance(thresholds, Mapping):
        errors.append(f"{prefix}_thresholds: {thresholds!r} must be a dict of thresholds")
    else:
        errors += [f"{prefix}_thresholds: {e}" for e in merge_thresholds(dict(thresholds))[1]]
    if not isinstance(severity, Mapping):
        errors.append(f"{prefix}_severity: {severity!r} must be a dict of check: fail|warn|off")
    else:
        errors += [f"{prefix}_{e}" for e in severity_errors(dict(severity))]
    if sources is not None and not isinstance(sources, Mapping):
        errors.append(f"{prefix}_sources: {sources!r} must be a dict of source: file")
    return errors


def _report(host: str, result: Any) -> tuple[dict[str, Any] | None, str]:
    """(the node's report, '') or (None, why there is none) from a registered node_health result."""
    if not isinstance(result, Mapping):
        return None, "no result"
    if isinstance(result.get("health"), Mapping):
        return dict(result["health"]), ""
    if result.get("unreachable"):
        return None, f"unreachable ({_first_line(result.get('msg'))})"
    if result.get("skipped"):
        return None, "skipped"
    return None, f"the checks did not run: {_first_line(result.get('msg'))}"


def _first_line(msg: Any) -> str:
    text = str(msg or "").strip()
    return text.splitlines()[0] if text else "no message"


def evaluate(
    results: Mapping[str, Any],
    hosts: Sequence[str],
    mode: str,
    severity: Mapping[str, str] | None = None,
    *,
    unreachable_named_elsewhere: bool = False,
) -> dict[str, Any]:
    """One report over all nodes from their node_health results.

    Returns ``{mode, ok, errors, warnings, missing, summary}``: ``errors`` the lines that stop the caller
    (mode fail: every finding of severity fail, one line each naming node, check, value and threshold, and
    every node whose checks did not run); ``warnings`` the rest; ``summary`` health.cluster.summarize's
    document (with the cross-node driver/CUDA comparison) plus ``not_run``. With
    UNREACHABLE_NAMED_ELSEWHERE an unreachable node is left to the caller's own message.
    """
    reports = []
    missing: dict[str, str] = {}
    for host in hosts:
        report, why = _report(host, results.get(host))
        if report is None:
            if not (unreachable_named_elsewhere and why.startswith("unreachable")):
                missing[host] = why
            continue
        reports.append(report)
    summary = summarize(reports, dict(severity or {}))
    summary["not_run"] = missing
    failing = [line(f) for f in _ordered(summary["findings"]) if f["severity"] == FAIL]
    others = [line(f) for f in _ordered(summary["findings"]) if f["severity"] != FAIL]
    not_run = [f"{h}: node health {why}" for h, why in missing.items()]
    if mode == "fail":
        errors, warnings = failing + not_run, others
    else:
        errors, warnings = [], failing + not_run + others
    return {
        "mode": mode,
        "ok": not failing and not missing,
        "errors": errors,
        "warnings": warnings,
        "missing": sorted(missing),
        "summary": summary,
    }


def _ordered(findings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(findings, key=lambda f: (f["severity"] != FAIL, f["node"], f["check"], str(f["subject"])))


def markdown(gate: Mapping[str, Any]) -> list[str]:
    """The report's "Node health" section (verify.yml)."""
    summary = gate["summary"]
    counts = summary["counts"]
    lines = [
        "",
        "## Node health",
        "",
        f"Mode {gate['mode']}: {counts['fail']} failing and {counts['warn']} warning finding(s) on "
        f"{len(summary['nodes'])} node(s) checked (docs/health.md).",
        "",
        "| node | result | checks run | skipped |",
        "|---|---|---:|---:|",
    ]
    for node, info in sorted(summary["nodes"].items()):
        checks = info.get("checks") or {}
        skipped = sum(1 for status in checks.values() if str(status).startswith("skipped"))
        failing = node in summary["failed_nodes"]
        lines.append(f"| {node} | {'FAIL' if failing else 'ok'} | {len(checks) - skipped} | {skipped} |")
    for node, why in sorted(summary.get("not_run", {}).items()):
        lines.append(f"| {node} | not checked: {why.replace('|', '/')} | 0 | 0 |")
    if summary["lines"]:
        lines += ["", *[f"- {text}" for text in summary["lines"]]]
    return lines
