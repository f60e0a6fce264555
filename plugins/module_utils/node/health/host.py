# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Host checks: available memory (/proc/meminfo), free disk where checkpoints go, and clock sync.

Clock sync reads ``chronyc -n tracking`` ("Leap status : Normal" or "Not synchronised", "System time :
0.000012 seconds fast of NTP time", chronyc(1)) or, without chrony, ``timedatectl show`` (systemd's
key=value properties; NTPSynchronized=yes|no, which systemd-timesyncd and chrony both set through the kernel's
synchronised flag).
"""

from __future__ import annotations

import os
import re
from typing import Any

from .findings import Findings

GIB = 1 << 30
_SYSTEM_TIME_RE = re.compile(r"^(?P<secs>[0-9.]+) seconds (?P<dir>fast|slow) of NTP time")


def parse_meminfo(text: str) -> dict[str, int]:
    """/proc/meminfo -> {field: bytes}."""
    out = {}
    for raw in text.splitlines():
        name, _sep, rest = raw.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            out[name.strip()] = int(parts[0]) * (1024 if len(parts) > 1 and parts[1] == "kB" else 1)
    return out


def check_memory(meminfo: dict[str, int], thresholds: dict[str, Any], out: Findings) -> None:
    total, avail = meminfo.get("MemTotal"), meminfo.get("MemAvailable")
    if not total or avail is None:
        out.mark("host.mem_available", "skipped: no MemTotal/MemAvailable in /proc/meminfo")
        return
    out.mark("host.mem_available", "pass")
    pct = 100.0 * avail / total
    limit = thresholds["host_mem_available_min_pct"]
    if pct < limit:
        out.add(
            "host.mem_available",
            "memory",
            f"{pct:.1f}%",
            f">= {limit:g}%",
            f"{avail / GIB:.1f} GiB available of {total / GIB:.1f} GiB",
        )


def existing_parent(path: str) -> str:
    """PATH, or its nearest existing parent: a checkpoint directory may not exist before the first run."""
    path = os.path.abspath(path)
    while not os.path.exists(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    return path


def free_bytes(path: str) -> int:
    stat = os.statvfs(existing_parent(path))
    return stat.f_bavail * stat.f_frsize


def check_disk(path: str | None, free: int | None, thresholds: dict[str, Any], out: Findings) -> None:
    if not path or free is None:
        out.mark("host.disk_free", "skipped: no checkpoint_dir")
        return
    out.mark("host.disk_free", "pass")
    limit = thresholds["host_disk_free_min_gib"]
    if free / GIB < limit:
        out.add(
            "host.disk_free",
            path,
            f"{free / GIB:.1f} GiB",
            f">= {limit:g} GiB",
            f"{free / GIB:.1f} GiB free for checkpoints on {existing_parent(path)}",
        )


def parse_chrony_tracking(text: str) -> dict[str, Any]:
    """``chronyc tracking`` -> {leap: str, offset_s: float (signed, + = fast), reference: str}."""
    fields = {}
    for raw in text.splitlines():
        key, sep, value = raw.partition(":")
        if sep:
            fields[key.strip()] = value.strip()
    if "Leap status" not in fields:
        raise ValueError(f"chronyc tracking printed no 'Leap status': {text.strip()[:200]!r}")
    offset = None
    match = _SYSTEM_TIME_RE.match(fields.get("System time", ""))
    if match:
        offset = float(match.group("secs")) * (1 if match.group("dir") == "fast" else -1)
    return {"leap": fields["Leap status"], "offset_s": offset, "reference": fields.get("Reference ID")}


def parse_timedatectl(text: str) -> dict[str, str]:
    """``timedatectl show`` -> {property: value}."""
    return dict(raw.split("=", 1) for raw in text.splitlines() if "=" in raw)


def check_clock(
    chrony: str | None, timedatectl: str | None, thresholds: dict[str, Any], out: Findings
) -> None:
    out.mark("host.clock_sync", "pass")
    limit = thresholds["host_clock_max_offset_s"]
    if chrony is not None:
        try:
            track = parse_chrony_tracking(chrony)
        except ValueError as exc:
            out.add("host.clock_sync", "chrony", "unreadable", "synchronised", str(exc))
            return
        if track["leap"] == "Not synchronised":
            out.add("host.clock_sync", "chrony", track["leap"], "synchronised", "chronyd is not synchronised")
        elif track["offset_s"] is not None and abs(track["offset_s"]) > limit:
            out.add(
                "host.clock_sync",
                "chrony",
                f"{track['offset_s']:+.6f} s",
                f"<= {limit:g} s",
                f"system clock is {abs(track['offset_s']):.6f} s off NTP time "
                f"(reference {track['reference']})",
            )
        return
    if timedatectl is not None:
        props = parse_timedatectl(timedatectl)
        synced = props.get("NTPSynchronized")
        if synced != "yes":
            out.add(
                "host.clock_sync",
                "timedatectl",
                f"NTPSynchronized={synced}",
                "NTPSynchronized=yes",
                "the clock is not NTP-synchronised "
                f"(NTP service {'on' if props.get('NTP') == 'yes' else 'off'})",
            )
        return
    out.add("host.clock_sync", "clock", "unknown", "synchronised", "neither chronyc nor timedatectl answered")
