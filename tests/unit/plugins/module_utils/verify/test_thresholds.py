"""verify_thresholds: validated limits and the verdict on one measurement."""

from __future__ import annotations

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils.verify import thresholds as vt
from ansible_collections.rdmaops.cluster.plugins.module_utils.verify.plan import VerifyError

from .conftest import measurement


def test_thresholds_validation() -> None:
    assert vt.thresholds(0.8, None, "", 40)["line_rate_gbps"] == 40.0
    for kwargs, message in (
        ({"min_fraction_of_line_rate": 1.5}, r"min_fraction_of_line_rate 1.5 must be in \(0, 1\]"),
        ({"min_gbps": "fast"}, "min_gbps 'fast' is not a number"),
        ({"max_latency_us": -3}, "max_latency_us -3 must be a non-negative number"),
        ({"line_rate_gbps": 0}, "line_rate_gbps 0 is not a line rate"),
        ({"min_busbw_gbps": True}, "min_busbw_gbps True is not a number"),
    ):
        with pytest.raises(VerifyError, match=message):
            vt.thresholds(**kwargs)


def test_throttled_link_fails_naming_it() -> None:
    limits = vt.thresholds(0.5, 1.0, 500)
    slow = measurement("node1", "node2", 0.19)
    assert vt.evaluate_measurement(slow, limits) == [
        "node1:data1 -> node2:data0 0.19 Gb/s < 0.5 x 10 Gb/s (= 5.00 Gb/s)",
        "node1:data1 -> node2:data0 0.19 Gb/s < floor 1 Gb/s",
    ]
    assert vt.evaluate_measurement(measurement("node1", "node2", 9.4), limits) == []
    late = measurement("node1", "node2", 9.4, latency_us=900.0)
    assert vt.evaluate_measurement(late, limits) == ["node1:data1 -> node2:data0 latency 900.0 us > 500 us"]
    detour = measurement("a", "b", 9.4, bytes_sent=10_000_000, port_tx_bytes=120_000, client_ifname="data1")
    assert vt.evaluate_measurement(detour, limits) == [
        "a:data1 -> b:data0: only 120000 of the 10000000 bytes sent left through data1"
        " (the traffic took another path)"
    ]
    direct = measurement("a", "b", 9.4, bytes_sent=10_000_000, port_tx_bytes=10_400_000)
    assert vt.evaluate_measurement(direct, limits) == []
    unknown = measurement("a", "b", 9.4, line_rate_gbps=None)
    assert "line rate is unknown" in vt.evaluate_measurement(unknown, limits)[0]
    broken = measurement("a", "b", None, error="iperf3 client failed (rc 1): unable to connect")
    assert vt.evaluate_measurement(broken, limits) == [
        "a:data1 -> b:data0: iperf3 client failed (rc 1): unable to connect"
    ]
