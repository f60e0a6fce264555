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
    "hold_before_confirm": 0,
    "timeout": 30,
}


def test_the_plan_is_what_the_module_gets() -> None:
    out = switch_qos_check(GOOD)
    assert out["errors"] == []
    plan = out["plan"]
    assert plan["roce_qos"]["dscp"] == 24 and plan["interfaces"] == ["Ethernet1/1", "eth1/2"]
    assert plan["names"]["class_map"] == "RDMA" and plan["names"]["input_policy"] == "ROCE-IN"
    assert plan["ecn"] == {"min_kbytes": 150, "max_kbytes": 3000, "drop_probability": 7, "weight": 0}
    assert plan["manual"] == [] and plan["roce_qos"]["cnp_dscp"] == 48


def test_ios_xe_plans_the_manual_pfc_step() -> None:
    out = switch_qos_check(GOOD | {"platform": "ios-xe", "interfaces": ["HundredGigE1/0/1"]})
    assert out["plan"]["manual"][0].startswith("IOS-XE has no YANG model for priority-flow-control")


def test_not_a_list_and_unknown_keys() -> None:
    assert switch_qos_check(GOOD | {"interfaces": "Ethernet1/1"})["errors"] == [
        "switch_qos_interfaces must be a list of port names, got 'Ethernet1/1'"
    ]
    errors = switch_qos_check(GOOD | {"names": {"colour": "x"}})["errors"]
    assert errors == [
        "switch_qos_names.colour is not a name the role owns (known: class_map, cnp_class_map, input_policy, "
        "group_class_map, cnp_group_class_map, output_policy, network_qos_policy)"
    ]


def test_the_confirm_timing_is_checked_with_the_inputs() -> None:
    errors = switch_qos_check(GOOD | {"confirm_timeout": 10, "hold_before_confirm": 60})["errors"]
    assert errors == [
        "switch_qos_hold_before_confirm 60 s is not shorter than switch_qos_confirm_timeout 10 s: the switch "
        "would roll back before the confirm"
    ]
    assert switch_qos_check(GOOD | {"hold_before_confirm": "-5"})["errors"] == [
        "switch_qos_hold_before_confirm must be 0 or more seconds, got '-5'"
    ]
