"""Shared helpers for the verify tests."""

from __future__ import annotations

from typing import Any


def measurement(client: str, server: str, gbps: float | None, **extra: Any) -> dict[str, Any]:
    """One bandwidth measurement as verify's link tests return it (10 Gb/s line rate, iperf3)."""
    return {
        "client": client,
        "server": server,
        "label": f"{client}:data1 -> {server}:data0",
        "gbps": gbps,
        "line_rate_gbps": 10.0,
        "latency_us": 40.0,
        "tool": "iperf3",
        **extra,
    }
