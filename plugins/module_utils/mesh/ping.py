# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Build `ping` command lines and read their output (iputils, the nodes' ping; busybox's also parses).

- argv(): the command line: count, interval, reply wait, a don't-fragment payload for an MTU check,
  the source address.
- df_payload(): the payload that fills an MTU exactly (MTU - 28 bytes of IPv4 + ICMP headers).
- parse(): the summary counters, every reply's round trip and the summary's min/avg/max/mdev line.
- rtt_stats(): latency figures (median, p99, ...) in microseconds from the per-reply lines.
- measure(): run ping and return those figures, or why it could not.

The formats, from iputils 20221126 (tests/unit/fixtures/ping):
  64 bytes from 127.0.0.1: icmp_seq=1 ttl=64 time=0.043 ms
  20 packets transmitted, 20 received, 0% packet loss, time 472ms
  3 packets transmitted, 0 received, +3 errors, 100% packet loss, time 408ms
  rtt min/avg/max/mdev = 0.038/0.042/0.048/0.003 ms
Busybox prints "seq=" replies, "N packets received" and "round-trip min/avg/max = a/b/c ms".
"""

from __future__ import annotations

import math
import re
import statistics
import subprocess
from typing import Any

# An IPv4 header (20 bytes, no options) plus an ICMP echo header (8 bytes) around the payload.
HEADER_BYTES = 28

_REPLY = re.compile(r"bytes from .*?time[=<]([0-9.]+) ms")
_TTL = re.compile(r"bytes from .*?ttl=(\d+)")
_COUNTS = re.compile(r"(\d+) packets transmitted, (\d+) (?:packets )?received")
# iputils only, after any "+N duplicates" / "+N corrupted" on the same line.
_ERRORS = re.compile(r"packets transmitted, .*?\+(\d+) errors")
_RTT = re.compile(
    r"(?:rtt|round-trip) min/avg/max(?:/mdev)? = ([0-9.]+)/([0-9.]+)/([0-9.]+)(?:/([0-9.]+))? ms"
)


class PingError(ValueError):
    """Output that is not ping's, or a ping that could not be run; the message says which."""


def df_payload(mtu: Any) -> int:
    """Payload of a don't-fragment ping whose packet is exactly ``mtu`` bytes."""
    return int(mtu) - HEADER_BYTES


def argv(
    address: str,
    *,
    count: int = 1,
    interval: float | str | None = None,
    wait_s: int | None = None,
    size: int = 0,
    source: str | None = None,
    quiet: bool = False,
) -> list[str]:
    """The ping command line. ``size`` > 0 sends that payload with don't-fragment (``-M do``), so a
    path whose MTU is smaller fails instead of fragmenting; ``source`` is an address or interface."""
    out = ["ping", "-n"]
    if quiet:
        out.append("-q")
    out += ["-c", str(count)]
    if interval is not None:
        out += ["-i", str(interval)]
    if wait_s is not None:
        out += ["-W", str(wait_s)]
    if size:
        out += ["-M", "do", "-s", str(size)]
    if source:
        out += ["-I", str(source)]
    return [*out, str(address)]


def parse(text: str) -> dict[str, Any]:
    """What the output holds, None where it holds nothing (a ping that failed early prints no summary).

    transmitted, received, errors: the summary counters; replies_ms: each reply's round trip; ttls: each
    reply's TTL; min_ms, avg_ms, max_ms, mdev_ms: the summary's rtt line (mdev None on busybox).
    """
    if not isinstance(text, str):
        raise PingError(f"ping output must be text, got {type(text).__name__}")
    counts = _COUNTS.search(text)
    errors = _ERRORS.search(text)
    rtt = _RTT.search(text)
    return {
        "transmitted": int(counts.group(1)) if counts else None,
        "received": int(counts.group(2)) if counts else None,
        "errors": (int(errors.group(1)) if errors else 0) if counts else None,
        "replies_ms": [float(m.group(1)) for m in _REPLY.finditer(text)],
        "ttls": [int(m.group(1)) for m in _TTL.finditer(text)],
        "min_ms": float(rtt.group(1)) if rtt else None,
        "avg_ms": float(rtt.group(2)) if rtt else None,
        "max_ms": float(rtt.group(3)) if rtt else None,
        "mdev_ms": float(rtt.group(4)) if rtt and rtt.group(4) else None,
    }


def hops_from_ttl(ttl: int | None) -> int | None:
    """Routers a reply crossed plus one (the hops of the path back), from its TTL.

    Hosts start replies at 64 (Linux), 128 or 255; each forwarding node takes one off, so a direct peer's
    reply arrives with the start value and a reply that crossed one node in between with one less.
    """
    if ttl is None or ttl <= 0 or ttl > 255:
        return None
    start = next(s for s in (64, 128, 255) if ttl <= s)
    return start - ttl + 1


def rtt_stats(text: str) -> dict[str, Any]:
    """Round-trip figures of ping output with one line per reply (not ``-q``).

    Returns transmitted, received, loss_pct, samples, and min/median/mean/max/p99 in microseconds
    (None when nothing came back). These are ICMP echo round trips through the kernel IP stack, not
    RDMA latency. Raises PingError when the text has neither replies nor a summary.
    """
    parsed = parse(text)
    samples = [ms * 1000.0 for ms in parsed["replies_ms"]]
    if parsed["transmitted"] is None and not samples:
        raise PingError(f"no ping replies or summary in output: {text.strip()[:200]!r}")
    transmitted = parsed["transmitted"] if parsed["transmitted"] is not None else len(samples)
    received = parsed["received"] if parsed["received"] is not None else len(samples)
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


def measure(
    address: str, *, count: int, interval: float, source: str | None = None, wait_s: int = 2
) -> tuple[dict[str, Any] | None, str | None]:
    """Ping ``count`` times and return (rtt_stats or None, error or None).

    No reply at all is an error, returned with the figures (which then say 100% loss).
    """
    command = argv(address, count=count, interval=interval, wait_s=wait_s, source=source)
    # The echoes take count x interval; the rest covers the last reply's wait and a slow start.
    timeout = count * interval + 10
    try:
        # subprocess, not run_command: run_command has no timeout
        out = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)  # pylint: disable=ansible-bad-function
        stats = rtt_stats(out.stdout)
    except (subprocess.TimeoutExpired, PingError) as exc:
        return None, f"ping {address}: {exc}"
    if stats["received"] == 0:
        return stats, f"ping {address}: no replies ({out.stderr.strip() or '100% loss'})"
    return stats, None
