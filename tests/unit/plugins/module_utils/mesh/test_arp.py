"""Who answers ARP for a NIC's address: arping's command line, its output read back (real outputs recorded on
the fab lab, tests/unit/fixtures/arping/SOURCES.md), and the ARP checks judged (mesh/arp.py,
reachability.arp_results, path_probe)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import arp, path_probe, reachability

from ...conftest import FIXTURE_DIR

ARPING = FIXTURE_DIR / "arping"
FLUX = (ARPING / "iputils_20221126_flux.txt").read_text()
ONE = (ARPING / "iputils_20221126_one.txt").read_text()
NONE = (ARPING / "iputils_20221126_none.txt").read_text()
NO_DEVICE = (ARPING / "iputils_20221126_no_device.txt").read_text()
# the fab lab's MACs (SOURCES.md)
NODE2 = {"data0": "1a:ea:a7:35:b2:f5", "data1": "96:dc:dd:7e:3a:99"}
NODE1_DATA1 = "4e:01:09:f1:a5:af"


def test_argv_keeps_broadcasting_from_the_rails_nic_and_address() -> None:
    assert arp.argv("192.168.200.4", ifname="data1", source="192.168.200.6") == [
        "arping",
        "-b",
        "-c",
        "3",
        "-w",
        "3",
        "-I",
        "data1",
        "-s",
        "192.168.200.6",
        "192.168.200.4",
    ]
    assert arp.argv("10.0.0.1", ifname="eth1", count=2, deadline_s=5)[1:7] == [
        "-b",
        "-c",
        "2",
        "-w",
        "5",
        "-I",
    ]


@pytest.mark.parametrize(
    ("text", "macs", "replies", "sent", "received"),
    [
        (FLUX, [NODE2["data1"], NODE2["data0"]], 3, 2, 3),
        (ONE, [NODE1_DATA1], 3, 3, 3),
        (NONE, [], 0, 3, 0),
        (NO_DEVICE, [], 0, None, None),
    ],
)
def test_parse_real_outputs(
    text: str, macs: list[str], replies: int, sent: int | None, received: int | None
) -> None:
    assert arp.parse(text) == {"macs": macs, "replies": replies, "sent": sent, "received": received}


def test_parse_counts_only_the_address_asked_for() -> None:
    assert arp.parse(FLUX, "192.168.200.4")["replies"] == 3
    assert arp.parse(FLUX, "192.168.200.3") == {"macs": [], "replies": 0, "sent": 2, "received": 3}


def _check(address: str = "192.168.200.4", expected: str = NODE2["data1"]) -> dict[str, Any]:
    """node3 asks, from its data1 (rail 1), who has node2's data1 address."""
    return {
        "dst": "node2",
        "kind": "arp",
        "address": address,
        "expected_dev": "data1",
        "size": 0,
        "source": "192.168.200.6",
        "rail": "rail1",
        "node": "node3",
        "peer_ifname": "data1",
        "expected_mac": expected,
        "nics": [
            {"mac": NODE2["data0"], "nic": "node2 data0, rail0"},
            {"mac": NODE2["data1"], "nic": "node2 data1, rail1"},
        ],
    }


class ArpRunner:
    """Answers arping with a recorded output, by the address asked for; records each batch."""

    def __init__(self, answers: dict[str, tuple[int, str, str]]) -> None:
        self.answers = answers
        self.batches: list[list[list[str]]] = []

    def __call__(self, commands: Sequence[Sequence[str]], timeout: float) -> list[dict[str, Any]]:
        self.batches.append([list(c) for c in commands])
        out = []
        for argv in commands:
            rc, stdout, stderr = self.answers[argv[-1]]
            out.append({"rc": rc, "stdout": stdout, "stderr": stderr})
        return out


def test_only_the_nics_own_mac_answering_passes() -> None:
    check = _check("192.168.200.2", NODE1_DATA1) | {"dst": "node1"}
    runner = ArpRunner({"192.168.200.2": (0, ONE, "")})
    (result,) = path_probe.probe([check], runner=runner)
    assert result["ok"] and result["macs"] == [NODE1_DATA1] and "error" not in result
    # no route lookup for an ARP check: one batch, the arping from the rail's NIC and address
    assert runner.batches == [[arp.argv("192.168.200.2", ifname="data1", source="192.168.200.6")]]


def test_arp_flux_names_the_nic_the_address_every_mac_and_its_nic() -> None:
    (result,) = path_probe.probe([_check()], runner=ArpRunner({"192.168.200.4": (1, FLUX, "")}))
    assert not result["ok"] and result["flux"] and result["macs"] == [NODE2["data1"], NODE2["data0"]]
    assert result["error"] == (
        "node2 data1 192.168.200.4 (rail1) ARP flux: answered by 96:dc:dd:7e:3a:99 (node2 data1, rail1), "
        "1a:ea:a7:35:b2:f5 (node2 data0, rail0) when asked from data1; only data1's 96:dc:dd:7e:3a:99 should "
        "answer"
    )


def test_another_nic_answering_alone_is_named() -> None:
    # node2's data0 address, asked as if it were data1's: the one MAC that answered is not data1's
    check = _check("192.168.200.3")
    text = ONE.replace("192.168.200.2", "192.168.200.3").replace(NODE1_DATA1.upper(), NODE2["data0"].upper())
    (result,) = path_probe.probe([check], runner=ArpRunner({"192.168.200.3": (0, text, "")}))
    assert not result["ok"] and not result["flux"]
    assert "ARP: answered by 1a:ea:a7:35:b2:f5 (node2 data0, rail0) when asked from data1" in result["error"]


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        ((1, NONE, ""), "node2 data1 192.168.200.4 (rail1) ARP: no answer when asked from data1"),
        (
            (2, "", NO_DEVICE),
            "node2 data1 192.168.200.4 (rail1) ARP: arping failed when asked from data1: arping: Device "
            "data9 not available.",
        ),
    ],
)
def test_no_answer_and_a_failed_arping_fail(answer: tuple[int, str, str], error: str) -> None:
    (result,) = path_probe.probe([_check()], runner=ArpRunner({"192.168.200.4": answer}))
    assert not result["ok"] and result["error"] == error


def test_unknown_mac_passes_one_answer_and_fails_two() -> None:
    # a peer outside the play: its MACs were not read, so one answer passes and two are still flux
    (ok,) = reachability.arp_results([_check("192.168.200.2", "")], [{"rc": 0, "stdout": ONE, "stderr": ""}])
    (flux,) = reachability.arp_results([_check(expected="")], [{"rc": 1, "stdout": FLUX, "stderr": ""}])
    assert ok["ok"] and not flux["ok"] and "should answer" not in flux["error"]


def test_an_arping_killed_before_its_summary_fails_with_what_it_said() -> None:
    killed = {"rc": 124, "stdout": FLUX.split("\n", 2)[1], "stderr": "arping: no answer within 8 s"}
    (result,) = reachability.arp_results([_check()], [killed])
    assert result["macs"] == [NODE2["data1"]] and not result["ok"]
    assert result["error"].endswith("ARP: arping failed when asked from data1: arping: no answer within 8 s")


def test_a_node_without_arping_is_not_checked_and_says_why() -> None:
    missing = {"rc": 127, "stdout": "", "stderr": "arping: No such file or directory"}
    (result,) = reachability.arp_results([_check()], [missing])
    assert result["ok"] and result["skipped"] == "arping is not installed (Debian: iputils-arping)"


def test_arps_run_beside_the_pings_in_the_order_given() -> None:
    fabric = {
        "dst": "node2",
        "kind": "fabric",
        "address": "192.168.200.4",
        "expected_dev": "data1",
        "size": 8972,
        "source": "192.168.200.6",
        "rail": "rail1",
        "node": "node3",
    }
    route = '[{"dst":"192.168.200.4","dev":"data1"}]'
    ping = "2 packets transmitted, 2 received, 0% packet loss, time 201ms\n"

    class Runner(ArpRunner):
        def __call__(self, commands: Sequence[Sequence[str]], timeout: float) -> list[dict[str, Any]]:
            self.batches.append([list(c) for c in commands])
            by_tool = {"ip": (0, route, ""), "ping": (0, ping, ""), "arping": (1, FLUX, "")}
            return [dict(zip(("rc", "stdout", "stderr"), by_tool[c[0]], strict=True)) for c in commands]

    runner = Runner({})
    arp_result, path_result = path_probe.probe([_check(), fabric], runner=runner)
    assert [b[0][0] for b in runner.batches] == ["ip", "ping"]
    assert [c[0] for c in runner.batches[1]] == ["ping", "arping"]
    assert arp_result["kind"] == "arp" and not arp_result["ok"]
    assert path_result["kind"] == "fabric" and path_result["ok"]
