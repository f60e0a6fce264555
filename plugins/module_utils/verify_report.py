# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fabric verification: which links to measure, in which rounds, and the report.

- links(): the links of the data network from each node's mesh_network plan (a direct link per node
  pair in a mesh; the fabric ports of every pair, or of a ring, in a switched fabric).
- schedule(): rounds of disjoint pairs (no node in two pairs of one round), so every pair of a round
  can run at the same time: the circle method (round-robin tournament) for all pairs, a greedy
  edge colouring for a ring.
- parse_ping(): round-trip times from `ping` output.
- build_report(), markdown(), render_heatmap(), write_report(): JSON, Markdown and a PNG heatmap.
"""

from __future__ import annotations

import json
import math
import os
import re
import statistics
import traceback
from types import ModuleType
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils import rdma_sysfs

PATTERNS = ("all_pairs", "ring")
DIRECTIONS = ("both", "one")


class VerifyError(ValueError):
    """Bad input for the verification plan or report; the message names the bad value."""


# --------------------------------------------------------------------------- links and rounds


def _check_hosts(hosts: Any) -> list[str]:
    if not isinstance(hosts, (list, tuple)) or not all(isinstance(h, str) and h for h in hosts):
        raise VerifyError(f"hosts must be a list of host names, got {hosts!r}")
    seen = set()
    for host in hosts:
        if host in seen:
            raise VerifyError(f"host {host!r} appears twice in the host list")
        seen.add(host)
    return list(hosts)


def _candidate_pairs(hosts: list[str], pattern: str) -> list[tuple[str, str]]:
    if pattern not in PATTERNS:
        raise VerifyError(f"pattern {pattern!r} must be one of {', '.join(PATTERNS)}")
    n = len(hosts)
    if pattern == "all_pairs":
        return [(hosts[i], hosts[j]) for i in range(n) for j in range(i + 1, n)]
    if n < 2:
        return []
    if n == 2:
        return [(hosts[0], hosts[1])]
    return [(hosts[i], hosts[(i + 1) % n]) for i in range(n)]


def links(plans: dict[str, Any], hosts: Any, pattern: str = "all_pairs") -> list[dict[str, Any]]:
    """The links to measure, from the mesh_network plan of every host (``mesh_network_plan`` facts).

    Mesh: the direct link between each pair (the pair's link addresses and ports). Switched: the fabric
    port and address of each end. Each entry: a, b, a_ifname, b_ifname, a_address, b_address, label.
    """
    names = _check_hosts(hosts)
    if not isinstance(plans, dict):
        raise VerifyError(f"plans must be a mapping of host to mesh_network_plan, got {type(plans).__name__}")
    missing = [h for h in names if not isinstance(plans.get(h), dict)]
    if missing:
        raise VerifyError(f"no mesh_network plan for {', '.join(missing)} (did mesh_network run on them?)")
    out: list[dict[str, Any]] = []
    for a, b in _candidate_pairs(names, pattern):
        plan_a, plan_b = plans[a], plans[b]
        if plan_a.get("topology") == "switched":
            end_a = {"ifname": plan_a["fabric"]["name"], "address": plan_a["node_address"]}
            end_b = {"ifname": plan_b["fabric"]["name"], "address": plan_b["node_address"]}
        else:
            link_a = next((x for x in plan_a.get("links", []) if x.get("peer") == b), None)
            link_b = next((x for x in plan_b.get("links", []) if x.get("peer") == a), None)
            if link_a is None or link_b is None:
                raise VerifyError(f"no direct link between {a} and {b} in the mesh plans")
            end_a = {"ifname": link_a["ifname"], "address": link_a["address"]}
            end_b = {"ifname": link_b["ifname"], "address": link_b["address"]}
        out.append(
            {
                "a": a,
                "b": b,
                "a_ifname": end_a["ifname"],
                "b_ifname": end_b["ifname"],
                "a_address": end_a["address"],
                "b_address": end_b["address"],
                "label": f"{a}:{end_a['ifname']} <-> {b}:{end_b['ifname']}",
            }
        )
    return out


def tournament_rounds(hosts: Any) -> list[list[tuple[str, str]]]:
    """Round-robin tournament (circle method): every pair exactly once, no host twice in a round.

    n-1 rounds of n/2 pairs for even n; n rounds of (n-1)/2 pairs for odd n (one host rests per round).
    """
    names = _check_hosts(hosts)
    if len(names) < 2:
        return []
    slots: list[str | None] = list(names) + ([None] if len(names) % 2 else [])
    n = len(slots)
    rounds: list[list[tuple[str, str]]] = []
    for _round in range(n - 1):
        pairs = []
        for i in range(n // 2):
            first, second = slots[i], slots[n - 1 - i]
            if first is not None and second is not None:
                # Keep the host-list order inside a pair, so a pair reads the same as its link.
                pairs.append((first, second) if names.index(first) < names.index(second) else (second, first))
        rounds.append(sorted(pairs, key=lambda p: (names.index(p[0]), names.index(p[1]))))
        # Keep slot 0 fixed and rotate the others by one.
        slots = [slots[0], slots[-1], *slots[1:-1]]
    return rounds


def greedy_rounds(pairs: list[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    """Put each pair into the first round where neither end is busy (optimal for paths and rings)."""
    rounds: list[list[tuple[str, str]]] = []
    busy: list[set[str]] = []
    for a, b in pairs:
        for index, used in enumerate(busy):
            if a not in used and b not in used:
                rounds[index].append((a, b))
                used.update((a, b))
                break
        else:
            rounds.append([(a, b)])
            busy.append({a, b})
    return rounds


def schedule(
    link_list: Any,
    hosts: Any,
    pattern: str = "all_pairs",
    directions: str = "both",
    max_concurrent: int = 0,
) -> list[list[dict[str, Any]]]:
    """Rounds of directed measurements; the pairs of one round share no host and can run together.

    Each measurement: client, server (the client sends to the server), client_ifname, server_ifname,
    client_address, server_address, link (the undirected label) and label (directed). With
    directions='both' every round is followed by the same round with client and server swapped.
    max_concurrent > 0 splits rounds so that at most that many pairs run at once.
    """
    names = _check_hosts(hosts)
    if directions not in DIRECTIONS:
        raise VerifyError(f"directions {directions!r} must be one of {', '.join(DIRECTIONS)}")
    try:
        cap = int(max_concurrent)
    except (TypeError, ValueError) as exc:
        raise VerifyError(f"max_concurrent {max_concurrent!r} is not an integer") from exc
    if cap < 0:
        raise VerifyError(f"max_concurrent {max_concurrent!r} must be 0 (no limit) or positive")
    if not isinstance(link_list, list):
        raise VerifyError(f"links must be a list, got {type(link_list).__name__}")
    by_pair = {(x["a"], x["b"]): x for x in link_list}
    for a, b in by_pair:
        if a not in names or b not in names:
            raise VerifyError(f"link {a} <-> {b} names a host outside {names}")
    if pattern == "all_pairs":
        raw = [[p for p in rnd if p in by_pair] for rnd in tournament_rounds(names)]
        raw += greedy_rounds([p for p in by_pair if not any(p in rnd for rnd in raw)])
    elif pattern == "ring":
        raw = greedy_rounds(list(by_pair))
    else:
        raise VerifyError(f"pattern {pattern!r} must be one of {', '.join(PATTERNS)}")
    raw = [rnd for rnd in raw if rnd]
    if cap:
        raw = [rnd[i : i + cap] for rnd in raw for i in range(0, len(rnd), cap)]

    def directed(link: dict[str, Any], forward: bool) -> dict[str, Any]:
        c, s = ("a", "b") if forward else ("b", "a")
        return {
            "client": link[c],
            "server": link[s],
            "client_ifname": link[f"{c}_ifname"],
            "server_ifname": link[f"{s}_ifname"],
            "client_address": link[f"{c}_address"],
            "server_address": link[f"{s}_address"],
            "link": link["label"],
            "label": f"{link[c]}:{link[c + '_ifname']} -> {link[s]}:{link[s + '_ifname']}",
        }

    rounds: list[list[dict[str, Any]]] = []
    for rnd in raw:
        rounds.append([directed(by_pair[p], True) for p in rnd])
        if directions == "both":
            rounds.append([directed(by_pair[p], False) for p in rnd])
    return rounds


def role_in_round(round_: list[dict[str, Any]], host: str) -> dict[str, Any]:
    """This host's part in a round: {'role': 'client'|'server'|'idle', 'pair': measurement or None}."""
    for pair in round_:
        if pair["client"] == host:
            return {"role": "client", "pair": pair}
        if pair["server"] == host:
            return {"role": "server", "pair": pair}
    return {"role": "idle", "pair": None}


# --------------------------------------------------------------------------- port gate


def gate(
    port_info: dict[str, Any], host: str, rdma_required: Any, require_active: Any, sysfs_root: str = "/sys"
) -> dict[str, Any]:
    """Judge one node's rdma_port_info result: available, summary, failures (empty when it passes)."""
    if not isinstance(port_info, dict):
        raise VerifyError(f"port info of {host} must be the rdma_port_info result, got {port_info!r}")
    ports = port_info.get("rdma_ports") or []
    required = (
        rdma_required
        if isinstance(rdma_required, bool)
        else str(rdma_required).lower() in ("true", "yes", "1")
    )
    if not ports:
        summary = f"no RDMA device (nothing under {sysfs_root.rstrip('/')}/class/infiniband)"
        failures = []
        if required:
            failures.append(
                f"{summary}; RDMA is required (verify_rdma_required): fix the NIC/driver, or set"
                " verify_rdma_required: false to verify the data network over TCP only"
            )
        return {"available": False, "summary": summary, "failures": failures, "ports": []}
    try:
        problems = rdma_sysfs.inactive_ports(ports, rdma_sysfs.normalize_required(require_active))
    except rdma_sysfs.RdmaSysfsError as exc:
        raise VerifyError(str(exc)) from exc
    parts = []
    for port in ports:
        text = f"{port['name']} {port.get('state')}/{port.get('phys_state')} {port.get('link_layer')}"
        if port.get("rate_gbps"):
            text += f" {port['rate_gbps']:g} Gb/s"
        if port.get("netdev"):
            text += f" netdev {port['netdev']}"
        if port.get("roce_v2_ipv4_gid_index") is not None:
            text += f" RoCEv2 GID {port['roce_v2_ipv4_gid_index']}"
        parts.append(text)
    return {"available": True, "summary": "; ".join(parts), "failures": problems, "ports": ports}


# --------------------------------------------------------------------------- environment file and all-reduce


def parse_env_file(text: str) -> dict[str, str]:
    """KEY=VALUE lines of an environment file (systemd EnvironmentFile / shell style, no expansion)."""
    out: dict[str, str] = {}
    for number, raw in enumerate(str(text).splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[len("export ") :].strip()
        key, sep, value = line.partition("=")
        if not sep or not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", key.strip()):
            raise VerifyError(f"environment file line {number} is not KEY=VALUE: {raw!r}")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        out[key.strip()] = value
    return out


def collective_result(runs: dict[str, Any], master: str) -> dict[str, Any]:
    """The all-reduce result from each node's command result: rank 0's JSON line, or an error naming nodes."""
    if not isinstance(runs, dict) or master not in runs:
        raise VerifyError(f"no all-reduce run recorded for the master {master!r}")
    failed = []
    for host, run in runs.items():
        run = run or {}
        if run.get("skipped"):
            failed.append(f"{host}: not run")
        elif run.get("rc") != 0:
            tail = [ln for ln in (run.get("stderr") or run.get("msg") or "").splitlines() if ln.strip()]
            reason = "timed out" if run.get("rc") in (124, 137) else f"rc {run.get('rc')}"
            failed.append(f"{host}: {reason}" + (f": {tail[-1].strip()[:300]}" if tail else ""))
    if failed:
        return {"error": "; ".join(failed), "results": []}
    for line in reversed((runs[master].get("stdout") or "").splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                document = json.loads(line)
            except ValueError:
                continue
            if isinstance(document, dict) and "results" in document:
                return document
    return {"error": f"{master}: no result line in the all-reduce output", "results": []}


# --------------------------------------------------------------------------- latency (ping)

_PING_REPLY = re.compile(r"bytes from .*?time[=<]([0-9.]+) ms")
_PING_SUMMARY = re.compile(r"(\d+) packets transmitted, (\d+) (?:packets )?received")


def parse_ping(text: str) -> dict[str, Any]:
    """Round-trip times of iputils/busybox `ping` output (one line per reply, not -q).

    Returns transmitted, received, loss_pct, and min/median/mean/max/p99 in microseconds (None when
    nothing came back). These are ICMP echo round trips through the kernel IP stack, not RDMA latency.
    """
    if not isinstance(text, str):
        raise VerifyError(f"ping output must be text, got {type(text).__name__}")
    samples = [float(m.group(1)) * 1000.0 for m in _PING_REPLY.finditer(text)]
    summary = _PING_SUMMARY.search(text)
    if summary is None and not samples:
        raise VerifyError(f"no ping replies or summary in output: {text.strip()[:200]!r}")
    transmitted = int(summary.group(1)) if summary else len(samples)
    received = int(summary.group(2)) if summary else len(samples)
    result: dict[str, Any] = {
        "transmitted": transmitted,
        "received": received,
        "loss_pct": round(100.0 * (transmitted - received) / transmitted, 2) if transmitted else 100.0,
        "samples": len(samples),
        "min_us": None,
        "median_us": None,
        "mean_us": None,
        "max_us": None,
        "p99_us": None,
    }
    if samples:
        ordered = sorted(samples)
        result.update(
            min_us=round(ordered[0], 1),
            median_us=round(statistics.median(ordered), 1),
            mean_us=round(statistics.fmean(ordered), 1),
            max_us=round(ordered[-1], 1),
            p99_us=round(ordered[min(len(ordered) - 1, math.ceil(0.99 * len(ordered)) - 1)], 1),
        )
    return result


# --------------------------------------------------------------------------- thresholds


def _number(value: Any, what: str, allow_none: bool = True) -> float | None:
    if value is None or value == "":
        if allow_none:
            return None
        raise VerifyError(f"{what} is required")
    if isinstance(value, bool):
        raise VerifyError(f"{what} {value!r} is not a number")
    try:
        number = float(value)
    except (TypeError, ValueError) as exc:
        raise VerifyError(f"{what} {value!r} is not a number") from exc
    if math.isnan(number) or number < 0:
        raise VerifyError(f"{what} {value!r} must be a non-negative number")
    return number


def thresholds(
    min_fraction_of_line_rate: Any = None,
    min_gbps: Any = None,
    max_latency_us: Any = None,
    line_rate_gbps: Any = None,
    min_busbw_gbps: Any = None,
) -> dict[str, Any]:
    """Validated thresholds (None = not checked); raises VerifyError naming a bad value.

    line_rate_gbps: a number overrides every link's line rate; "median" takes the median bandwidth of
    the run's links as their line rate (a baseline for links without a defined rate, such as veths).
    """
    median = isinstance(line_rate_gbps, str) and line_rate_gbps.strip().lower() == "median"
    out: dict[str, Any] = {
        "min_fraction_of_line_rate": _number(min_fraction_of_line_rate, "min_fraction_of_line_rate"),
        "min_gbps": _number(min_gbps, "min_gbps"),
        "max_latency_us": _number(max_latency_us, "max_latency_us"),
        "line_rate_gbps": "median" if median else _number(line_rate_gbps, "line_rate_gbps"),
        "min_busbw_gbps": _number(min_busbw_gbps, "min_busbw_gbps"),
    }
    fraction = out["min_fraction_of_line_rate"]
    if fraction is not None and not 0 < fraction <= 1:
        raise VerifyError(f"min_fraction_of_line_rate {min_fraction_of_line_rate!r} must be in (0, 1]")
    if out["line_rate_gbps"] == 0:
        raise VerifyError("line_rate_gbps 0 is not a line rate (leave it unset to use the port's rate)")
    return out


def evaluate_measurement(measurement: dict[str, Any], limits: dict[str, Any]) -> list[str]:
    """Every threshold one directed measurement misses, naming the link and both numbers."""
    failures: list[str] = []
    label = measurement["label"]
    if measurement.get("error"):
        return [f"{label}: {measurement['error']}"]
    gbps = measurement.get("gbps")
    line_rate = measurement.get("line_rate_gbps")
    fraction = limits.get("min_fraction_of_line_rate")
    if gbps is None:
        failures.append(f"{label}: no bandwidth measured")
    else:
        if fraction is not None:
            if not line_rate:
                failures.append(
                    f"{label}: {gbps:.2f} Gb/s, but the line rate is unknown (set verify_line_rate_gbps)"
                )
            elif gbps < fraction * line_rate:
                failures.append(
                    f"{label} {gbps:.2f} Gb/s < {fraction:g} x {line_rate:g} Gb/s"
                    f" (= {fraction * line_rate:.2f} Gb/s)"
                )
        floor = limits.get("min_gbps")
        if floor is not None and gbps < floor:
            failures.append(f"{label} {gbps:.2f} Gb/s < floor {floor:g} Gb/s")
    sent, on_port = measurement.get("bytes_sent"), measurement.get("port_tx_bytes")
    if isinstance(sent, int) and isinstance(on_port, int) and sent > 0 and on_port < 0.9 * sent:
        port = measurement.get("client_ifname", "the port")
        failures.append(
            f"{label}: only {on_port} of the {sent} bytes sent left through {port}"
            " (the traffic took another path)"
        )
    latency = measurement.get("latency_us")
    ceiling = limits.get("max_latency_us")
    if ceiling is not None:
        if latency is None:
            failures.append(f"{label}: no latency measured")
        elif latency > ceiling:
            failures.append(f"{label} latency {latency:.1f} us > {ceiling:g} us")
    return failures


def evaluate_collective(collective: dict[str, Any] | None, limits: dict[str, Any]) -> list[str]:
    floor = limits.get("min_busbw_gbps")
    if collective is None:
        return []
    if collective.get("error"):
        return [f"all-reduce: {collective['error']}"]
    results = collective.get("results") or []
    if not results:
        return ["all-reduce: no results"]
    if floor is None:
        return []
    best = max(r["busbw_gbps"] for r in results)
    if best < floor:
        return [
            f"all-reduce ({collective.get('backend')}, {collective.get('world_size')} ranks) peak bus "
            f"bandwidth {best:.2f} Gb/s < floor {floor:g} Gb/s"
        ]
    return []


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
) -> dict[str, Any]:
    """The whole report as one JSON-serialisable document, with pass/fail per measurement."""
    names = _check_hosts(hosts)
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
                reach_failures.append(f"{host} -> {entry.get('error') or entry.get('address')}")
    failures = reach_failures + failures
    gate_failures = [f"{h}: {msg}" for h, g in sorted((gate or {}).items()) for msg in g.get("failures", [])]
    failures = gate_failures + failures + evaluate_collective(collective, limits)
    return {
        "meta": dict(meta or {}),
        "hosts": names,
        "thresholds": dict(limits),
        "line_rate_gbps": line_rate,
        "gate": gate or {},
        "reachability": reachability or {},
        "measurements": rows,
        "collective": collective,
        "failures": failures,
        "passed": not failures,
    }


def matrix(report: dict[str, Any], key: str = "gbps") -> list[list[float | None]]:
    """hosts x hosts matrix of `key`, row = sender (client), column = receiver (server)."""
    names = report["hosts"]
    grid: list[list[float | None]] = [[None] * len(names) for _name in names]
    for row in report["measurements"]:
        grid[names.index(row["client"])][names.index(row["server"])] = row.get(key)
    return grid


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


def render_heatmap(report: dict[str, Any], path: str) -> None:
    """PNG: the bandwidth matrix, coloured by fraction of line rate, each cell annotated."""
    matplotlib, error = load_matplotlib()
    if matplotlib is None:
        raise VerifyError(f"matplotlib is needed for the heatmap: {error.strip().splitlines()[-1]}")
    plt = matplotlib.pyplot
    names = report["hosts"]
    gbps = matrix(report, "gbps")
    fraction = matrix(report, "fraction_of_line_rate")
    rows = {(r["client"], r["server"]): r for r in report["measurements"]}
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
        f"{meta.get('mode', '?')} bandwidth, {meta.get('topology', '?')}, sender -> receiver - {verdict}\n"
        f"{basis}; {meta.get('timestamp', '')}",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_report(report: dict[str, Any], directory: str, latest_link: str | None = None) -> dict[str, str]:
    """Write report.json, report.md and bandwidth.png into directory; point latest_link at it."""
    os.makedirs(directory, exist_ok=True)
    paths = {
        "json": os.path.join(directory, "report.json"),
        "markdown": os.path.join(directory, "report.md"),
        "heatmap": os.path.join(directory, "bandwidth.png"),
    }
    with open(paths["json"], "w", encoding="utf-8") as handle:
        json.dump(report, handle, indent=2, sort_keys=True)
        handle.write("\n")
    with open(paths["markdown"], "w", encoding="utf-8") as handle:
        handle.write(markdown(report))
    render_heatmap(report, paths["heatmap"])
    if latest_link:
        # Replace the link atomically: a reader never sees it missing.
        tmp = f"{latest_link}.tmp{os.getpid()}"
        target = os.path.relpath(directory, os.path.dirname(os.path.abspath(latest_link)))
        os.symlink(target, tmp)
        os.replace(tmp, latest_link)
        paths["latest"] = latest_link
    return paths
