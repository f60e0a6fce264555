"""The switch_qos role's validate phase (module_utils/qos/phase.py)."""

from __future__ import annotations

from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.qos.phase import switch_qos_check

GOOD: dict[str, Any] = {
    "roce_qos": {"dscp": "24"},
    "platform": "nx-os",
    "interfaces": ["Ethernet1/1", "eth1/2"],
    "names": {"class_map": "RDMA"},
    "ecn": {},
    "password": "",
    "ssh_key": "/home/admin/.ssh/id_ed25519",
    "confirm_timeout": 120,
}


def test_the_plan_is_what_the_module_gets() -> None:
    out = switch_qos_check(GOOD)
    assert out["errors"] == []
    plan = out["plan"]
    assert plan["roce_qos"]["dscp"] == 24 and plan["interfaces"] == ["Ethernet1/1", "eth1/2"]
    assert plan["names"]["class_map"] == "RDMA" and plan["names"]["input_policy"] == "ROCE-IN"
    assert plan["ecn"] == {"min_kbytes": 150, "max_kbytes": 3000, "drop_probability": 7, "weight": 0}
    assert plan["manual"] == []


def test_ios_xe_plans_the_manual_pfc_step() -> None:
    out = switch_qos_check(GOOD | {"platform": "ios-xe", "interfaces": ["HundredGigE1/0/1"]})
    assert out["plan"]["manual"][0].startswith("IOS-XE has no YANG model for priority-flow-control")


def test_not_a_list_and_unknown_keys() -> None:
    assert switch_qos_check(GOOD | {"interfaces": "Ethernet1/1"})["errors"] == [
        "switch_qos_interfaces must be a list of port names, got 'Ethernet1/1'"
    ]
    errors = switch_qos_check(GOOD | {"names": {"colour": "x"}})["errors"]
    assert len(errors) == 1 and errors[0].startswith("switch_qos_names / switch_qos_ecn has an unknown key")
