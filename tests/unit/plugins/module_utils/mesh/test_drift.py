"""What networkd set on the data ports and the kernel lost since (plugins/module_utils/mesh/drift.py), read
from outputs recorded on the fab lab (tests/unit/fixtures/iproute2/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import drift

from ...conftest import FIXTURE_DIR

IPROUTE2 = FIXTURE_DIR / "iproute2"
NODE2_DATA1 = (IPROUTE2 / "networkd_node2_data1_shared.network.txt").read_text()
NODE1_RULES = (IPROUTE2 / "ip_rule_node1_shared.json").read_text()
NODE2_RULES = (IPROUTE2 / "ip_rule_node2_shared_rule_deleted.json").read_text()
EXPECT = [("data0", "192.168.200.3/24"), ("data1", "192.168.200.4/24")]
ADDRESSES = {"data0": {"192.168.200.3/24"}, "data1": {"192.168.200.4/24"}}


def test_networkd_rules_of_a_generated_file() -> None:
    assert drift.networkd_rules(NODE2_DATA1) == [("192.168.200.4/32", "101", 101)]
    text = "[RoutingPolicyRule]\nFrom=10.200.0.9\nTable=200\n\n[RoutingPolicyRule]\nTo=10.0.0.0/8\n"
    assert drift.networkd_rules(text) == [("10.200.0.9/32", "200", 0)]


def test_live_rules_leave_out_rules_without_a_source() -> None:
    assert drift.live_rules(NODE1_RULES) == {
        ("192.168.200.1/32", "100", 100),
        ("192.168.200.2/32", "101", 101),
    }
    assert drift.live_rules('[{"priority":5,"src":"10.1.0.0","srclen":16,"table":"7"}]') == {
        ("10.1.0.0/16", "7", 5)
    }


def test_the_deleted_source_rule_and_a_deleted_address_are_missing() -> None:
    configured = {"data0": [("192.168.200.3/32", "100", 100)], "data1": drift.networkd_rules(NODE2_DATA1)}
    live = drift.live_rules(NODE2_RULES)
    assert drift.missing(EXPECT, ADDRESSES, configured, live) == [
        ("data1", "rule from 192.168.200.4/32 table 101 priority 101")
    ]
    assert drift.missing(EXPECT, {"data0": ADDRESSES["data0"]}, {}, live) == [
        ("data1", "address 192.168.200.4/24")
    ]
    assert drift.describe([("data1", "address 192.168.200.4/24")]) == ["data1: address 192.168.200.4/24"]


def test_read_drift_reads_the_ports_networkd_files_and_the_rules_once(tmp_path: Path) -> None:
    (tmp_path / "10-netplan-data1.network").write_text(NODE2_DATA1)
    calls: list[list[str]] = []

    def run(argv: list[str]) -> tuple[int, str]:
        calls.append(argv)
        return 0, NODE2_RULES

    lost = drift.read_drift(EXPECT, lambda: ADDRESSES, str(tmp_path), run)
    assert lost == [("data1", "rule from 192.168.200.4/32 table 101 priority 101")]
    assert calls == [["ip", "-j", "rule", "show"]]
    # no ports to hold, no rules configured, or no answer from ip: nothing read, or nothing to compare with
    assert drift.read_drift([], lambda: {}, str(tmp_path), run) == [] and len(calls) == 1
    assert drift.read_drift([("data0", "192.168.200.3/24")], lambda: ADDRESSES, str(tmp_path), run) == []
    assert drift.read_drift(EXPECT, lambda: ADDRESSES, str(tmp_path), lambda argv: (1, "")) == []
