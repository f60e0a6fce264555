# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""RDMA checks: port state and rate (via ..rdma.sysfs), error counters growing since the last check, and PFC
pause frames.

Counters follow the kernel's Documentation/ABI/stable/sysfs-class-infiniband: each file under
ports/<n>/counters/ holds one decimal number from the port's PortCounters (symbol_error, link_downed,
port_rcv_errors, local_link_integrity_errors, excessive_buffer_overrun_errors, port_xmit_discards...), and the
optional ports/<n>/hw_counters/ holds the driver's own (mlx5: local_ack_timeout_err, out_of_buffer...).
PFC pause counters are not in sysfs: mlx5 prints them per priority in ``ethtool -S`` as rx_prio<N>_pause and
tx_prio<N>_pause (drivers/net/ethernet/mellanox/mlx5/core/en_stats.c), other NICs under other names or not at
all, in which case the check is skipped.
"""

from __future__ import annotations

import os
import re
from typing import Any

from ..rdma import sysfs
from .findings import Findings

# Per-lane signalling rates of the IB speed names the kernel prints in "rate" ("100 Gb/sec (4X EDR)").
LANE_GBPS = {
    "SDR": 2.5,
    "DDR": 5,
    "QDR": 10,
    "FDR10": 10,
    "FDR": 14,
    "EDR": 25,
    "HDR": 50,
    "NDR": 100,
    "XDR": 200,
}
_RATE_DETAIL_RE = re.compile(r"\((?P<width>\d+)X\s*(?P<speed>[A-Z0-9]+)\)")
_PAUSE_RE = re.compile(r"^\s*(?P<name>(?:rx|tx)_prio\d_pause|(?:rx|tx)_pause_ctrl_phy):\s*(?P<value>\d+)\s*$")


def read_counters(sysfs_root: str, port: dict[str, Any]) -> dict[str, int]:
    """counters/* and hw_counters/* of one port as {name: value}; unreadable or non-numeric files left out."""
    base = os.path.join(sysfs_root, "class", "infiniband", port["device"], "ports", str(port["port"]))
    values: dict[str, int] = {}
    for sub in ("counters", "hw_counters"):
        try:
            names = sorted(os.listdir(os.path.join(base, sub)))
        except OSError:
            continue
        for name in names:
            if name == "lifespan":  # the refresh period in ms, not a counter
                continue
            text = sysfs.read_attr(os.path.join(base, sub, name))
            if text is not None and text.isdigit():
                values[name] = int(text)
    return values


def parse_ethtool_pause(text: str) -> dict[str, int]:
    """The PFC/global pause frame counters in ``ethtool -S DEV`` output."""
    out = {}
    for raw in text.splitlines():
        match = _PAUSE_RE.match(raw)
        if match:
            out[match.group("name")] = int(match.group("value"))
    return out


def selected_ports(
    ports: list[dict[str, Any]], spec: str | list[str]
) -> tuple[list[dict[str, Any]], list[str]]:
    """The ports RDMA_PORTS names, and one line per named port that does not exist."""
    if spec == "none":
        return [], []
    if spec == "all":
        return list(ports), []
    chosen: list[dict[str, Any]] = []
    missing = []
    for name in spec:
        match = [p for p in ports if name in (p["name"], p["device"])]
        if not match:
            missing.append(name)
        chosen.extend(m for m in match if m not in chosen)
    return chosen, missing


def rate_shortfall(
    rate_text: str | None, rate_gbps: float | None, want_gbps: float, want_width: str
) -> str | None:
    """Why a port runs below WANT_GBPS, naming the narrower width or slower speed; None when it does not."""
    if rate_gbps is None or rate_gbps >= want_gbps:
        return None
    detail = _RATE_DETAIL_RE.search(rate_text or "")
    if not detail:
        return f"rate {rate_text} is below {want_gbps:g} Gb/s"
    width, speed = int(detail.group("width")), detail.group("speed")
    lane = LANE_GBPS.get(speed)
    reasons = []
    if want_width:
        want_w = int(want_width.rstrip("Xx"))
        if width < want_w:
            reasons.append(f"degraded width {width}X (expected {want_w}X)")
        if lane and want_w and lane * want_w < want_gbps:
            better = [n for n, g in LANE_GBPS.items() if g * want_w >= want_gbps]
            reasons.append(f"degraded speed {speed} (expected {better[0] if better else 'faster'})")
    else:
        # Without an expected width, name both ways the port could reach the expected rate.
        ways = []
        if lane and (want_gbps / lane) in (1, 2, 4, 8, 12):
            ways.append(f"{int(want_gbps / lane)}X {speed}")
        faster = [n for n, g in LANE_GBPS.items() if g * width == want_gbps]
        if faster:
            ways.append(f"{width}X {faster[0]}")
        reasons.append(
            f"{width}X {speed}" + (f", where {want_gbps:g} Gb/s needs {' or '.join(ways)}" if ways else "")
        )
    return f"rate {rate_text} below {want_gbps:g} Gb/s: " + "; ".join(reasons)


def check_ports(
    ports: list[dict[str, Any]], thresholds: dict[str, Any], out: Findings
) -> list[dict[str, Any]]:
    """Port state and rate; returns the ports the counter checks look at."""
    chosen, missing = selected_ports(ports, thresholds["rdma_ports"])
    if thresholds["rdma_ports"] == "none":
        out.mark("rdma.port_state", "skipped: rdma_ports is none")
        out.mark("rdma.rate", "skipped: rdma_ports is none")
        return []
    out.mark("rdma.port_state", "pass" if ports or missing else "skipped: no RDMA device")
    present = ", ".join(p["name"] for p in ports) or "none"
    for name in missing:
        out.add("rdma.port_state", name, "absent", "ACTIVE/LinkUp", f"no such RDMA port (present: {present})")
    for port in chosen:
        if not port["active"]:
            out.add(
                "rdma.port_state",
                port["name"],
                f"{port['state']}/{port['phys_state']}",
                "ACTIVE/LinkUp",
                f"port is {port['state']}, physical state {port['phys_state']} "
                f"(netdev {port['netdev'] or 'none'})",
            )
    want = thresholds["rdma_rate_gbps"]
    out.mark("rdma.rate", "pass" if want and chosen else "skipped: rdma_rate_gbps not set or no port")
    if want:
        for port in chosen:
            if not port["active"]:
                continue
            why = rate_shortfall(port["rate"], port["rate_gbps"], want, thresholds["rdma_width"])
            if why:
                out.add(
                    "rdma.rate",
                    port["name"],
                    port["rate"],
                    f"{want:g} Gb/s {thresholds['rdma_width']}".strip(),
                    why,
                )
    return chosen


def _growth(now: int, before: Any) -> int | None:
    """Counter growth; None when there is no baseline or the counter went back (reset, wrap, reload)."""
    if not isinstance(before, int) or now < before:
        return None
    return now - before


def check_counters(
    current: dict[str, dict[str, int]],
    baseline: dict[str, dict[str, int]] | None,
    thresholds: dict[str, Any],
    out: Findings,
) -> None:
    """One finding per port and watched counter that grew more than its max_growth since BASELINE."""
    table = thresholds["rdma_counters"]
    if baseline is None:
        out.mark("rdma.counter", "skipped: first check, baseline recorded" if current else "skipped: no port")
        return
    out.mark("rdma.counter", "pass" if current else "skipped: no port")
    for port, values in sorted(current.items()):
        before = baseline.get(port, {})
        for name, row in table.items():
            if name not in values:
                continue
            grew = _growth(values[name], before.get(name))
            if grew is not None and grew > row["max_growth"]:
                out.add(
                    "rdma.counter",
                    f"{port} {name}",
                    f"+{grew}",
                    f"+{row['max_growth']}",
                    f"{name} grew by {grew} since the last check (now {values[name]})",
                    severity=row["severity"],
                )


def check_pause(
    current: dict[str, dict[str, int]],
    baseline: dict[str, dict[str, int]] | None,
    elapsed_s: float | None,
    thresholds: dict[str, Any],
    out: Findings,
) -> None:
    """Pause frames per second since the last check, per netdev and counter, against rdma_pfc_pause_per_s."""
    if not current:
        out.mark("rdma.pfc_pause", "skipped: no pause counters (ethtool -S)")
        return
    if baseline is None or not elapsed_s or elapsed_s <= 0:
        out.mark("rdma.pfc_pause", "skipped: first check, baseline recorded")
        return
    out.mark("rdma.pfc_pause", "pass")
    limit = thresholds["rdma_pfc_pause_per_s"]
    for netdev, values in sorted(current.items()):
        for name, value in sorted(values.items()):
            grew = _growth(value, baseline.get(netdev, {}).get(name))
            if grew is None:
                continue
            per_s = grew / elapsed_s
            if per_s > limit:
                out.add(
                    "rdma.pfc_pause",
                    f"{netdev} {name}",
                    f"{per_s:.0f}/s",
                    f"{limit:g}/s",
                    f"{grew} pause frames in {elapsed_s:.0f} s: the link is being paused "
                    "(congestion or a PFC storm)",
                )
