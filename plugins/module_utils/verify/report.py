# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fabric verification: the report, as a document and as files.

- build_report(): the JSON-serialisable document with a verdict per measurement (limits applied
  with verify_thresholds) and every failure of the gate, reachability, links and all-reduce.
- matrix(), markdown(), render_heatmap(), write_report(): the sender x receiver matrix, the Markdown
  summary (with the sections of the QoS, NCCL path, health and GPU-to-NIC affinity checks), the PNG heatmap,
  and report.json / report.md / bandwidth.png with a "latest" link.

The plan (and VerifyError) is in verify_plan; what the nodes return is read by verify_parse.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import traceback
from types import ModuleType
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.nccl import affinity as nccl_affinity
from ansible_collections.rdmaops.cluster.plugins.module_utils.node.health import gate as health_gate
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import verify as verify_qos
from ansible_collections.rdmaops.cluster.plugins.module_utils.verify import nccl_path
from ansible_collections.rdmaops.cluster.plugins.module_utils.verify.plan import VerifyError, check_hosts
from ansible_collections.rdmaops.cluster.plugins.module_utils.verify.thresholds import (
    evaluate_collective,
    evaluate_measurement,
)

# --------------------------------------------------------------------------- report


def build_report(
    hosts: Any,
    measurements: Any,
    limits: dict[str, Any],
    *,
    meta: dict[str, Any] | None = None,
    gate: dict[str, Any] | None = None,
    reachability: dict[str, Any] | None = None,
    collective: dict[str, Any] | None = None,
    qos: dict[str, Any] | None = None,
    nccl: dict[str, Any] | None = None,
    health: dict[str, Any] | None = None,
    affinity: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The whole report as one JSON-serialisable document, with pass/fail per measurement. HEALTH: the node
    health gate over all nodes (health/gate.py evaluate); its errors (mode fail) count as failures. AFFINITY:
    the GPU-to-NIC section (nccl/affinity.py cluster); its warnings are reported, not failures."""
    names = check_hosts(hosts)
    if not isinstance(measurements, list):
        raise VerifyError(f"measurements must be a list, got {type(measurements).__name__}")
    for entry in measurements:
        if not isinstance(entry, dict) or not {"client", "server", "label"} <= set(entry):
            raise VerifyError(f"measurement {entry!r} lacks client, server or label")
        for end in ("client", "server"):
            if entry[end] not in names:
                raise VerifyError(
                    f"measurement {entry['label']!r} names {end} {entry[end]!r}, not one of {names}"
                )
    line_rate = limits.get("line_rate_gbps")
    if line_rate == "median":
        measured = [m["gbps"] for m in measurements if isinstance(m.get("gbps"), (int, float))]
        line_rate = round(statistics.median(measured), 4) if measured else None
    rows = []
    failures: list[str] = []
    for entry in sorted(measurements, key=lambda m: (names.index(m["client"]), names.index(m["server"]))):
        row = dict(entry)
        if line_rate is not None:
            row["line_rate_gbps"] = line_rate
        gbps, line_rate = row.get("gbps"), row.get("line_rate_gbps")
        row["fraction_of_line_rate"] = round(gbps / line_rate, 4) if gbps is not None and line_rate else None
        row["failures"] = evaluate_measurement(row, limits)
        row["passed"] = not row["failures"]
        failures += row["failures"]
        rows.append(row)
    reach_failures = []
    for host, entries in sorted((reachability or {}).items()):
        for entry in entries or []:
            if not entry.get("ok"):
                error = str(entry.get("error") or entry.get("address"))
                # a NIC's own check names its node first ("node1 data1 (rail1) egress: ...")
                reach_failures.append(error if error.startswith(f"{host} ") else f"{host} -> {error}")
    failures = reach_failures + failures
    gate_failures = [f"{h}: {msg}" for h, g in sorted((gate or {}).items()) for msg in g.get("failures", [])]
    failures = gate_failures + failures + evaluate_collective(collective, limits)
    failures += [f"QoS: {p}" for p in (qos or {}).get("problems", [])]
    failures += [f"NCCL path: {p}" for p in (nccl or {}).get("problems", [])]
    failures += [f"health: {p}" for p in (health or {}).get("errors", [])]
    return {
        "meta": dict(meta or {}),
        "hosts": names,
        "thresholds": dict(limits),
        "line_rate_gbps": line_rate,
        "gate": gate or {},
        "reachability": reachability or {},
        "measurements": rows,
        "collective": collective,
        "qos": qos,
        "nccl_path": nccl,
        "health": health,
        "gpu_nic_affinity": affinity,
        "failures": failures,
        "passed": not failures,
    }


def rail_names(report: dict[str, Any]) -> list[str]:
    """The rails the measurements ran on (a switched fabric with several NICs per node), in order; empty
    when the links are not rails (one matrix covers them)."""
    names: list[str] = []
    for row in report["measurements"]:
        if row.get("rail") and row["rail"] not in names:
            names.append(row["rail"])
    return names


def matrix(report: dict[str, Any], key: str = "gbps", rail: str | None = None) -> list[list[float | None]]:
    """hosts x hosts matrix of `key`, row = sender (client), column = receiver (server); with RAIL, that
    rail's measurements only (every rail joins each pair once)."""
    names = report["hosts"]
    grid: list[list[float | None]] = [[None] * len(names) for _name in names]
    for row in report["measurements"]:
        if rail is None or row.get("rail") == rail:
            grid[names.index(row["client"])][names.index(row["server"])] = row.get(key)
    return grid


def rail_matrix_lines(report: dict[str, Any], rail: str) -> list[str]:
    """One rail's bandwidth as a Markdown table: Gb/s per sender (row) and receiver (column), with the
    NIC each node uses on the rail."""
    names = report["hosts"]
    nics = {}
    for row in report["measurements"]:
        if row.get("rail") == rail:
            nics[row["client"]] = row.get("client_ifname", "")
            nics[row["server"]] = row.get("server_ifname", "")
    grid = matrix(report, "gbps", rail)
    rows = [r for r in report["measurements"] if r.get("rail") == rail]
    fails = {(r["client"], r["server"]) for r in rows if not r["passed"]}
    head = [f"{n} ({nics.get(n, '?')})" for n in names]
    lines = [
        f"### {rail}",
        "",
        "| sender -> receiver | " + " | ".join(head) + " |",
        "|---|" + "---:|" * len(names),
    ]
    for i, sender in enumerate(names):
        cells = []
        for j, receiver in enumerate(names):
            value = grid[i][j]
            cell = "-" if i == j else _fmt(value, ".2f")
            cells.append(cell + (" FAIL" if (sender, receiver) in fails else ""))
        lines.append(f"| {head[i]} | " + " | ".join(cells) + " |")
    return [*lines, ""]


def _fmt(value: Any, spec: str, unit: str = "") -> str:
    return "n/a" if value is None else f"{value:{spec}}{unit}"


def _verdict(report: dict[str, Any]) -> str:
    if report["meta"].get("check_mode"):
        return "CHECK MODE, nothing measured"
    return "PASSED" if report["passed"] else "FAILED"


def markdown(report: dict[str, Any]) -> str:
    """Human summary: verdict, per-link table, all-reduce table, failures."""
    meta = report["meta"]
    lines = [
        f"# Fabric verification {meta.get('timestamp', '')}".rstrip(),
        "",
        f"**{_verdict(report)}**: {len(report['hosts'])} nodes, topology "
        f"{meta.get('topology', '?')}, mode {meta.get('mode', '?')}, pattern {meta.get('pattern', '?')}, "
        f"{len(report['measurements'])} directed measurements in {meta.get('rounds', '?')} rounds.",
        "",
    ]
    limits = report["thresholds"]
    lines.append(
        "Thresholds: min fraction of line rate "
        f"{_fmt(limits.get('min_fraction_of_line_rate'), 'g')}, "
        f"floor {_fmt(limits.get('min_gbps'), 'g', ' Gb/s')}, "
        f"max latency {_fmt(limits.get('max_latency_us'), 'g', ' us')}, all-reduce bus bandwidth floor "
        f"{_fmt(limits.get('min_busbw_gbps'), 'g', ' Gb/s')}."
    )
    if meta.get("line_rate_note"):
        lines.append(f"Line rate: {meta['line_rate_note']}")
    if limits.get("line_rate_gbps") == "median" and report.get("line_rate_gbps") is not None:
        lines.append(
            f"Median of this run's links, used as every link's line rate: {report['line_rate_gbps']:g} Gb/s."
        )
    if meta.get("latency_note"):
        lines.append(f"Latency: {meta['latency_note']}")
    if meta.get("elapsed_s") is not None:
        lines.append(f"Run started {meta.get('started', '?')}, took {meta['elapsed_s']} s.")
    lines += ["", "## Port state", ""]
    for host, gate in sorted(report["gate"].items()):
        lines.append(f"- {host}: {gate.get('summary', 'n/a')}")
    lines += [
        "",
        "## Links",
        "",
        "| sender -> receiver | Gb/s | line rate Gb/s | fraction | latency us (median) | tool | result |",
        "|---|---:|---:|---:|---:|---|---|",
    ]
    for row in report["measurements"]:
        # The link is named in the first column: the cell keeps only what failed.
        reasons = [
            f[len(row["label"]) :].lstrip(": ") if f.startswith(row["label"]) else f for f in row["failures"]
        ]
        verdict = "ok" if row["passed"] else "FAIL: " + "; ".join(reasons).replace("|", "/")
        lines.append(
            f"| {row['label']} | {_fmt(row.get('gbps'), '.2f')} | {_fmt(row.get('line_rate_gbps'), '.4g')} | "
            f"{_fmt(row.get('fraction_of_line_rate'), '.0%')} | {_fmt(row.get('latency_us'), '.1f')} | "
            f"{row.get('tool', '')} | {verdict} |"
        )
    rails = rail_names(report)
    if rails:
        lines += ["", "## Bandwidth per rail (Gb/s, sender row, receiver column)", ""]
        for rail in rails:
            lines += rail_matrix_lines(report, rail)
    reach = report["reachability"]
    if reach:
        total = sum(len(v or []) for v in reach.values())
        good = sum(1 for v in reach.values() for e in (v or []) if e.get("ok"))
        lines += [
            "",
            "## Reachability",
            "",
            f"{good}/{total} paths OK (route over the expected port, don't-fragment ping at the MTU).",
        ]
        degraded = [
            f"{h} -> {e['note']}" for h, v in sorted(reach.items()) for e in v or [] if e.get("degraded")
        ]
        if degraded:
            lines += [
                "",
                f"{len(degraded)} of them DEGRADED, on a backup route around a cable that is out:",
                "",
            ]
            lines += [f"- {d}" for d in degraded]
        if meta.get("reachability_table"):
            lines += ["", "```", str(meta["reachability_table"]).rstrip(), "```"]
    collective = report["collective"]
    if collective is not None:
        lines += ["", "## All-reduce", ""]
        if collective.get("error"):
            lines.append(f"Failed: {collective['error']}")
        else:
            lines += [
                f"{collective.get('backend')} backend, {collective.get('world_size')} ranks, "
                f"dtype {collective.get('dtype')}, {collective.get('iters')} timed iterations per size. "
                "busbw = algbw x 2(n-1)/n.",
                "",
                "| size | time ms | algbw Gb/s | busbw Gb/s |",
                "|---:|---:|---:|---:|",
            ]
            for res in collective.get("results") or []:
                lines.append(
                    f"| {_human_bytes(res['bytes'])} | {res['time_ms']:.3f} | {res['algbw_gbps']:.3f} | "
                    f"{res['busbw_gbps']:.3f} |"
                )
    if report.get("qos"):
        lines += verify_qos.markdown(report["qos"])
    if report.get("nccl_path"):
        lines += nccl_path.markdown(report["nccl_path"])
    if report.get("health"):
        lines += health_gate.markdown(report["health"])
    if report.get("gpu_nic_affinity"):
        lines += nccl_affinity.markdown(report["gpu_nic_affinity"])
    if report["failures"]:
        lines += ["", "## Failures", ""] + [f"- {f}" for f in report["failures"]]
    return "\n".join(lines) + "\n"


def _human_bytes(size: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:g} {unit}" if unit == "B" else f"{size:.0f} {unit}"
        size = size / 1024
    return str(size)


def load_matplotlib() -> tuple[ModuleType | None, str]:
    """matplotlib with the Agg backend (imported only here: nodes that run the measurement modules
    need not have it), or None and the import traceback."""
    try:
        import matplotlib  # pylint: disable=import-outside-toplevel

        matplotlib.use("Agg")
        import matplotlib.patches  # pylint: disable=import-outside-toplevel
        import matplotlib.pyplot  # pylint: disable=import-outside-toplevel
    except ImportError:
        return None, traceback.format_exc()
    return matplotlib, ""


def render_heatmap(report: dict[str, Any], path: str, rail: str | None = None) -> None:
    """PNG: the bandwidth matrix (one rail's with RAIL), coloured by fraction of line rate, each cell
    annotated."""
    matplotlib, error = load_matplotlib()
    if matplotlib is None:
        raise VerifyError(f"matplotlib is needed for the heatmap: {error.strip().splitlines()[-1]}")
    plt = matplotlib.pyplot
    names = report["hosts"]
    gbps = matrix(report, "gbps", rail)
    fraction = matrix(report, "fraction_of_line_rate", rail)
    rows = {
        (r["client"], r["server"]): r for r in report["measurements"] if rail is None or r.get("rail") == rail
    }
    n = len(names)
    size = max(4.5, 1.3 * n + 2.5)
    fig, ax = plt.subplots(figsize=(size + 1.5, size))
    values = [[math.nan if v is None else v for v in row] for row in fraction]
    cmap = matplotlib.colormaps["RdYlGn"].with_extremes(bad="#d9d9d9")
    image = ax.imshow(values, cmap=cmap, vmin=0.0, vmax=1.0)
    ax.set_xticks(range(n), names, rotation=30, ha="right")
    ax.set_yticks(range(n), names)
    ax.set_xlabel("receiver (server)")
    ax.set_ylabel("sender (client)")
    for i in range(n):
        for j in range(n):
            if i == j:
                ax.text(j, i, "-", ha="center", va="center", color="#666666")
                continue
            if gbps[i][j] is None:
                ax.text(j, i, "not\nmeasured", ha="center", va="center", fontsize=8, color="#444444")
                continue
            row = rows[(names[i], names[j])]
            text = (
                f"{row.get('client_ifname', '')} -> {row.get('server_ifname', '')}\n"
                if "client_ifname" in row
                else ""
            )
            text += f"{gbps[i][j]:.2f} Gb/s"
            if fraction[i][j] is not None:
                text += f"\n{fraction[i][j]:.0%} of line"
            if row.get("latency_us") is not None:
                text += f"\n{row['latency_us']:.0f} us"
            if not row["passed"]:
                text += "\nFAIL"
                ax.add_patch(
                    matplotlib.patches.Rectangle(
                        (j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="black", lw=3
                    )
                )
            ax.text(j, i, text, ha="center", va="center", fontsize=9, fontweight="bold")
    colorbar = fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    colorbar.set_label("fraction of line rate")
    limits = report["thresholds"]
    if limits.get("min_fraction_of_line_rate") is not None:
        colorbar.ax.axhline(limits["min_fraction_of_line_rate"], color="black", lw=2)
        colorbar.ax.text(
            1.05,
            limits["min_fraction_of_line_rate"],
            " min",
            va="center",
            fontsize=8,
            transform=colorbar.ax.get_yaxis_transform(),
        )
    meta = report["meta"]
    verdict = "PASSED" if report["passed"] else f"FAILED ({len(report['failures'])} failures)"
    if limits.get("line_rate_gbps") == "median" and report.get("line_rate_gbps") is not None:
        basis = f"line rate = median of links, {report['line_rate_gbps']:.2f} Gb/s"
    elif isinstance(limits.get("line_rate_gbps"), (int, float)):
        basis = f"line rate {limits['line_rate_gbps']:g} Gb/s"
    else:
        basis = "line rate of each port"
    ax.set_title(
        f"{meta.get('mode', '?')} bandwidth, {meta.get('topology', '?')}"
        f"{', ' + rail if rail else ''}, sender -> receiver - {verdict}\n"
        f"{basis}; {meta.get('timestamp', '')}",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_report(report: dict[str, Any], directory: str, latest_link: str | None = None) -> dict[str, Any]:
    """Write report.json, report.md and bandwidth.png (several rails: bandwidth-<rail>.png each, the first
    as heatmap, all in heatmaps) into directory; point latest_link at it."""
    os.makedirs(directory, exist_ok=True)
    paths: dict[str, Any] = {
        "json": os.path.join(directory, "report.json"),
        "markdown": os.path.join(directory, "report.md"),
        "heatmap": os.path.join(directory, "bandwidth.png"),
    }
    with open(paths["json"], "w", encoding="utf-8") as handle:
        json.dump(report, handle, indent=2, sort_keys=True)
        handle.write("\n")
    with open(paths["markdown"], "w", encoding="utf-8") as handle:
        handle.write(markdown(report))
    rails = rail_names(report)
    if rails:
        heatmaps = [os.path.join(directory, f"bandwidth-{rail}.png") for rail in rails]
        for rail, path in zip(rails, heatmaps, strict=True):
            render_heatmap(report, path, rail)
        paths["heatmap"] = heatmaps[0]
    else:
        heatmaps = [paths["heatmap"]]
        render_heatmap(report, paths["heatmap"])
    if latest_link:
        # Replace the link atomically: a reader never sees it missing.
        tmp = f"{latest_link}.tmp{os.getpid()}"
        target = os.path.relpath(directory, os.path.dirname(os.path.abspath(latest_link)))
        os.symlink(target, tmp)
        os.replace(tmp, latest_link)
        paths["latest"] = latest_link
    return {**paths, "heatmaps": heatmaps}
