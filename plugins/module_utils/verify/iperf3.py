# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse the JSON that `iperf3 -J` prints (client or server side)."""

from __future__ import annotations

import json
from typing import Any


class Iperf3ParseError(ValueError):
    """The text holds no iperf3 JSON document."""


def _load(text: str) -> dict[str, Any]:
    # iperf3 may print a warning line before the document; take the first JSON object.
    start = text.find("{")
    if start < 0:
        raise Iperf3ParseError(f"no JSON object in iperf3 output: {text.strip()[:200]!r}")
    try:
        document, _end = json.JSONDecoder().raw_decode(text[start:])
    except json.JSONDecodeError as exc:
        raise Iperf3ParseError(f"invalid iperf3 JSON: {exc}") from exc
    if not isinstance(document, dict) or "start" not in document:
        raise Iperf3ParseError("JSON document is not iperf3 output (no 'start' section)")
    return document


def _gbps(section: dict[str, Any] | None) -> float | None:
    if not section or "bits_per_second" not in section:
        return None
    return round(float(section["bits_per_second"]) / 1e9, 6)


def parse(text: str) -> dict[str, Any]:
    """Summarize one iperf3 run: throughput sent/received in Gb/s, bytes, retransmits, CPU, error."""
    document = _load(text)
    start = document.get("start", {})
    end = document.get("end", {})
    test_start = start.get("test_start", {})
    connected = start.get("connected") or [{}]
    sum_sent = end.get("sum_sent")
    sum_received = end.get("sum_received")
    cpu = end.get("cpu_utilization_percent", {})
    result: dict[str, Any] = {
        "error": document.get("error"),
        "version": start.get("version"),
        "role": "client" if "connecting_to" in start else ("server" if start.get("connected") else None),
        "protocol": test_start.get("protocol"),
        "num_streams": test_start.get("num_streams"),
        "reverse": bool(test_start.get("reverse")),
        "duration_s": test_start.get("duration"),
        "local_host": connected[0].get("local_host"),
        "local_port": connected[0].get("local_port"),
        "remote_host": connected[0].get("remote_host"),
        "remote_port": connected[0].get("remote_port"),
        "seconds": (sum_received or sum_sent or {}).get("seconds"),
        "bytes_sent": (sum_sent or {}).get("bytes"),
        "bytes_received": (sum_received or {}).get("bytes"),
        "sent_gbps": _gbps(sum_sent),
        "received_gbps": _gbps(sum_received),
        "retransmits": (sum_sent or {}).get("retransmits"),
        "cpu_host_percent": cpu.get("host_total"),
        "cpu_remote_percent": cpu.get("remote_total"),
        "intervals": len(document.get("intervals", [])),
    }
    # What arrived at the receiver is the number that matters for a link.
    result["gbps"] = result["received_gbps"] if result["received_gbps"] is not None else result["sent_gbps"]
    result["complete"] = result["error"] is None and result["gbps"] is not None
    return result
