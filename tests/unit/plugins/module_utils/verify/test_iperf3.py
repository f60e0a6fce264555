"""iperf3 -J parsing on real outputs (plugins/module_utils/verify/iperf3.py)."""

from __future__ import annotations

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils.verify import iperf3

from ...conftest import FIXTURE_DIR

FIXTURES = FIXTURE_DIR / "iperf3"


def load(name: str) -> dict:
    return iperf3.parse((FIXTURES / name).read_text())


def test_client_single_stream() -> None:
    r = load("client.json")
    assert (r["role"], r["protocol"], r["num_streams"], r["duration_s"]) == ("client", "TCP", 1, 2)
    assert r["bytes_sent"] == 4615045120 and r["bytes_received"] == 4613079040
    assert r["received_gbps"] == pytest.approx(18.444173, abs=1e-6)
    assert r["gbps"] == r["received_gbps"]
    assert r["retransmits"] == 9
    assert (r["remote_host"], r["remote_port"]) == ("127.0.0.1", 5299)
    assert r["complete"] is True and r["error"] is None


def test_server_sees_the_same_received_bytes() -> None:
    client, server = load("client.json"), load("server.json")
    assert server["role"] == "server"
    assert server["bytes_received"] == client["bytes_received"]
    assert server["gbps"] == client["gbps"]


def test_two_streams_are_summed() -> None:
    r = load("client_p2.json")
    assert r["num_streams"] == 2
    assert r["received_gbps"] == pytest.approx(2031616000 * 8 / 1.002252 / 1e9, rel=1e-6)


def test_connection_refused() -> None:
    r = load("refused.json")
    assert r["error"] == "unable to connect to server: Connection refused"
    assert r["complete"] is False and r["gbps"] is None and r["role"] is None


def test_warning_before_the_document_is_skipped() -> None:
    text = "warning: something\n" + (FIXTURES / "client.json").read_text()
    assert iperf3.parse(text)["gbps"] == load("client.json")["gbps"]


@pytest.mark.parametrize(
    ("text", "match"),
    [("iperf3: error - unable to connect", "no JSON"), ("{broken", "invalid"), ('{"a": 1}', "not iperf3")],
)
def test_garbage(text: str, match: str) -> None:
    with pytest.raises(iperf3.Iperf3ParseError, match=match):
        iperf3.parse(text)
