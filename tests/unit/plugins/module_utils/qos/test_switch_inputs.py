"""module_utils/qos/switch_inputs.py: the switch_qos inputs refused naming the value, port names keyed as the
switch keys them."""

from __future__ import annotations

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import roce as rq
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import switch_inputs as si

NAMES, ECN = si.Names(), si.Ecn()
XE_PORTS = ["HundredGigE1/0/1", "HundredGigE1/0/2"]
NX_PORTS = ["Ethernet1/1", "eth1/2"]


@pytest.mark.parametrize(
    "platform,ports,message",
    [
        ("ios-xe", ["Ethernet1/1"], "'Ethernet1/1' is not an IOS-XE interface name like HundredGigE1/0/1"),
        ("nx-os", ["HundredGigE1/0/1"], "'HundredGigE1/0/1' is not an NX-OS interface name like Ethernet1/1"),
        ("nx-os", ["Ethernet1/1", "eth1/1"], "interface 'eth1/1' is listed twice (also as 'Ethernet1/1')"),
        ("ios-xe", [], "switch_qos_interfaces is empty"),
        ("eos", ["Ethernet1"], "switch_qos_platform 'eos' is not one of ios-xe, nx-os"),
    ],
)
def test_inputs_refused_naming_the_value(platform: str, ports: list[str], message: str) -> None:
    assert any(message in e for e in si.input_errors(platform, ports, NAMES, ECN))


def test_names_and_thresholds_checked() -> None:
    errors = si.input_errors(
        "nx-os", NX_PORTS, si.Names(class_map="RO CE", output_policy="ROCE-IN"), si.Ecn(300, 100)
    )
    assert any("switch_qos_names.class_map 'RO CE'" in e for e in errors)
    assert any("must all differ" in e for e in errors)
    assert any("ECN thresholds must satisfy 0 <= min < max, got 300..100" in e for e in errors)


@pytest.mark.parametrize(
    ("names", "ecn", "message"),
    [
        ({"class_map": 5}, {}, "switch_qos_names.class_map 5 is not a name of 1-40 letters, digits, _ . -"),
        ({"class_map": "ROCE\n"}, {}, "switch_qos_names.class_map 'ROCE\\n' is not a name of 1-40 letters"),
        (
            {},
            {"min_kbytes": "150k"},
            "switch_qos_ecn.min_kbytes must be a whole number 0..52428800 kbytes, got '150k'",
        ),
        (
            {},
            {"max_kbytes": 3000.5},
            "switch_qos_ecn.max_kbytes must be a whole number 0..52428800 kbytes, got 3000.5",
        ),
        ({}, {"weight": True}, "switch_qos_ecn.weight must be a whole number 0..15, got True"),
        (
            {},
            {"drop_probability": 101},
            "switch_qos_ecn.drop_probability must be a whole number 0..100, got 101",
        ),
        ({}, "150", "switch_qos_ecn must be a mapping of thresholds, got '150'"),
        ({}, {"colour": 1}, "switch_qos_ecn.colour is not a threshold (known: min_kbytes, max_kbytes"),
    ],
)
def test_bad_types_are_named_like_bad_values_not_a_type_error(
    names: object, ecn: object, message: str
) -> None:
    errors = si.check_inputs("nx-os", NX_PORTS, names, ecn)[0]
    assert len(errors) == 1 and errors[0].startswith(message), errors


def test_ecn_thresholds_given_as_digits_are_numbers() -> None:
    errors, ecn = si.check_inputs("nx-os", NX_PORTS, {}, {"min_kbytes": "200", "max_kbytes": 4000})[::2]
    assert errors == [] and ecn == si.Ecn(200, 4000)


@pytest.mark.parametrize(
    ("platform", "ports", "message"),
    [
        ("nx-os", ["Ethernet1/1\n"], "interface 'Ethernet1/1\\n' is not an NX-OS interface name"),
        ("nx-os", ["Ethernet1/\u0661"], "interface 'Ethernet1/\u0661' is not an NX-OS interface name"),
        ("nx-os", ["Ethernet\uff11/1"], "is not an NX-OS interface name"),
        ("ios-xe", ["HundredGigE1/0/1\n"], "interface 'HundredGigE1/0/1\\n' is not an IOS-XE interface name"),
        ("ios-xe", ["HundredGigE1/0/\u0661"], "is not an IOS-XE interface name"),
        (
            "nx-os",
            ["Ethernet1/1", "Ethernet01/01"],
            "interface 'Ethernet01/01' is listed twice (also as 'Ethernet1/1')",
        ),
        ("nx-os", ["eth1/01", "Ethernet1/1"], "interface 'Ethernet1/1' is listed twice (also as 'eth1/01')"),
        ("ios-xe", ["HundredGigE1/0/1", "HundredGigE01/0/001"], "listed twice (also as 'HundredGigE1/0/1')"),
        ("nx-os", ["Ethernet1/1", 7], "switch_qos_interfaces[1] must be a port name (a string), got 7"),
    ],
)
def test_port_names_are_ascii_whole_and_compared_by_number(
    platform: str, ports: list[object], message: str
) -> None:
    errors = si.check_inputs(platform, ports, {}, {})[0]
    assert any(message in e for e in errors), errors


def test_a_port_with_leading_zeros_is_keyed_as_the_switch_keys_it() -> None:
    assert si.interface_parts("nx-os", "Ethernet01/01") == ("eth", "eth1/1")
    assert si.display_interface("ios-xe", "HundredGigE1/0/01") == "HundredGigE1/0/1"


def test_qos_group_0_on_nx_os_is_refused_with_the_reason() -> None:
    qos = rq.settings({"qos_group": 0})
    errors = si.check_inputs("nx-os", NX_PORTS, {}, {}, qos)[0]
    assert errors == [
        "roce_qos.qos_group 0 is NX-OS's default class (c-8q-nq-default), which carries all unclassified "
        "traffic: RoCE and CNP need classes of their own, pick 1..7"
    ]
    assert si.check_inputs("ios-xe", XE_PORTS, {}, {}, qos)[0] == []
