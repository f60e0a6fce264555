# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fabric verification: thresholds, and judging a measurement or the all-reduce against them.

- thresholds(): validated limits (None = not checked; line rate a number or "median").
- evaluate_measurement(), evaluate_collective(): every limit missed, each naming the link and numbers.

verify_report builds the report from these verdicts; VerifyError is in verify_plan.
"""

from __future__ import annotations

import math
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.node.values import as_float
from ansible_collections.rdmaops.cluster.plugins.module_utils.verify.plan import VerifyError

# --------------------------------------------------------------------------- thresholds


def _number(value: Any, what: str, allow_none: bool = True) -> float | None:
    if value is None or value == "":
        if allow_none:
            return None
        raise VerifyError(f"{what} is required")
    number = as_float(value)
    if number is None:
        raise VerifyError(f"{what} {value!r} is not a number")
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
