"""module_utils/qos/switch.py and roce_qos.py: payloads, running read back as lines, inputs refused."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
import yaml

from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import roce as rq
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import switch as sq

from ...conftest import ROOT

QOS = rq.settings({})
NAMES, ECN = sq.Names(), sq.Ecn()
XE_PORTS = ["HundredGigE1/0/1", "HundredGigE1/0/2"]
NX_PORTS = ["Ethernet1/1", "eth1/2"]


def _tree(platform: str, ports: list[str], qos: dict[str, object] | None = None) -> str:
    qos = qos or QOS
    return ET.tostring(sq.data_tree(platform, qos, ports, NAMES, ECN), encoding="unicode")


def test_roce_qos_defaults_and_one_check() -> None:
    # the defaults are the ones docs/switch_qos.md gives an operator to copy
    doc = (ROOT / "docs" / "switch_qos.md").read_text()
    block = doc.split("```yaml\n", 1)[1].split("```", 1)[0]
    defaults = rq.settings(None)
    assert defaults == yaml.safe_load(block)["roce_qos"]
    assert (defaults["dscp"], defaults["cos"], defaults["qos_group"]) == (26, 3, 3)
    assert rq.settings({"dscp": "46"})["dscp"] == 46
    assert rq.nccl_ib_tc({}) == 104
    assert rq.errors({"dscp": 64, "cos": 8, "priority_level": 3, "colour": 1, "ecn": "yes"}) == [
        "roce_qos.colour is not a setting (known: dscp, cos, qos_group, priority_level, mtu, ecn, cnp_dscp, "
        "cnp_qos_group, roce_queue, bandwidth_percent, pfc_watchdog)",
        "roce_qos.dscp must be an integer 0..63, got 64",
        "roce_qos.cos must be an integer 0..7, got 8",
        "roce_qos.priority_level must be an integer 1..2, got 3",
        "roce_qos.ecn must be true or false, got 'yes'",
    ]
    assert rq.errors({"dscp": True}) == ["roce_qos.dscp must be an integer 0..63, got True"]
    assert rq.errors("26") == ["roce_qos must be a mapping like " + str(rq.DEFAULTS) + ", got '26'"]
    with pytest.raises(ValueError, match=r"mtu must be an integer 1500\.\.9216, got 9217"):
        rq.settings({"mtu": 9217})


@pytest.mark.parametrize("platform,ports", [("ios-xe", XE_PORTS), ("nx-os", NX_PORTS)])
def test_rendered_tree_reads_back_as_the_intended_lines(platform: str, ports: list[str]) -> None:
    lines, have_ports = sq.running(platform, _tree(platform, ports), NAMES)
    want = sq.intended(platform, QOS, ports, NAMES, ECN)
    assert sq.differences(want, lines) == []
    assert len(have_ports) == 2


def test_nx_os_lines_read_like_the_cli() -> None:
    text = sq.cli(sq.intended("nx-os", QOS, NX_PORTS, NAMES, ECN))
    assert (
        "policy-map type network-qos ROCE-NQ\n class type network-qos c-8q-nq3\n  pause pfc-cos 3\n" in text
    )
    assert (
        "interface Ethernet1/2\n priority-flow-control mode on\n priority-flow-control "
        "watch-dog-interval on\n"
        " mtu 9216\n" in text
    )
    assert (
        "system qos\n service-policy type network-qos ROCE-NQ\n service-policy type queuing output ROCE-OUT\n"
        in text
    )


def test_dscp_names_a_device_returns_count_as_numbers() -> None:
    root = sq.data_tree("ios-xe", QOS, XE_PORTS, NAMES, ECN)
    dscp = root.find(f".//{{{sq.XE_POLICY}}}dscp")
    assert dscp is not None and dscp.text == "26"
    dscp.text = "af31"
    lines = sq.running("ios-xe", ET.tostring(root, encoding="unicode"), NAMES)[0]
    assert sq.differences(sq.intended("ios-xe", QOS, XE_PORTS, NAMES, ECN), lines) == []


def test_what_differs_is_named_both_ways() -> None:
    other = dict(QOS, dscp=46, priority_level=2)
    lines = sq.running("ios-xe", _tree("ios-xe", XE_PORTS, other), NAMES)[0]
    diff = sq.differences(sq.intended("ios-xe", QOS, XE_PORTS, NAMES, ECN), lines)
    assert "+ class-map match-any ROCE / match dscp 26" in diff
    assert "- class-map match-any ROCE / match dscp 46" in diff
    assert "- policy-map ROCE-OUT / class ROCE-CNP-QG / priority level 2" in diff


def test_unknown_leaves_in_owned_objects_count_as_differences() -> None:
    root = sq.data_tree("nx-os", QOS, NX_PORTS, NAMES, ECN)
    mc = next(
        el
        for el in root.iter(f"{{{sq.NX}}}MatchCMap-list")
        if el.findtext(f"{{{sq.NX}}}name") == "c-out-8q-q3"
    )
    ET.SubElement(ET.SubElement(mc, f"{{{sq.NX}}}setBW-items"), f"{{{sq.NX}}}val").text = "50"
    lines = sq.running("nx-os", root, NAMES)[0]
    diff = sq.differences(sq.intended("nx-os", QOS, NX_PORTS, NAMES, ECN), lines)
    assert diff == [
        "- policy-map type queuing ROCE-OUT / class type queuing c-out-8q-q3 / setBW-items val 50"
    ]


def test_other_objects_and_unlisted_ports_are_not_ours() -> None:
    lines, ports = sq.running("ios-xe", _tree("ios-xe", XE_PORTS), NAMES)
    owned = sq.owned_running("ios-xe", lines, ["HundredGigE1/0/1"])
    assert all("1/0/2" not in line[0] for line in owned)
    assert sq.unknown_interfaces("ios-xe", ["HundredGigE1/0/1", "HundredGigE1/0/9"], ports) == [
        "HundredGigE1/0/9"
    ]


def test_edit_payload_replaces_owned_objects_only() -> None:
    payload = sq.edit_config("ios-xe", QOS, XE_PORTS, NAMES, ECN)
    root = ET.fromstring(payload)
    op = f"{{{sq.NC}}}operation"
    replaced = [el.tag.rsplit("}", 1)[1] for el in root.iter() if el.get(op) == "replace"]
    assert replaced == ["service-policy", "service-policy"] + ["class-map"] * 4 + ["policy-map"] * 2
    assert root.find(f".//{{{sq.XE}}}HundredGigE").get(op) is None


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
    assert any(message in e for e in sq.input_errors(platform, ports, NAMES, ECN))


def test_names_and_thresholds_checked() -> None:
    errors = sq.input_errors(
        "nx-os", NX_PORTS, sq.Names(class_map="RO CE", output_policy="ROCE-IN"), sq.Ecn(300, 100)
    )
    assert any("switch_qos_names.class_map 'RO CE'" in e for e in errors)
    assert any("must all differ" in e for e in errors)
    assert any("ECN thresholds must satisfy 0 <= min < max, got 300..100" in e for e in errors)


def test_ios_xe_pfc_is_reported_not_pretended() -> None:
    steps = sq.manual_steps("ios-xe", QOS, XE_PORTS)
    assert "PFC on CoS 3 was NOT configured" in steps[0] and "HundredGigE1/0/2" in steps[0]
    assert sq.manual_steps("nx-os", QOS, NX_PORTS) == []


# ------------------------------------------------------------------ inputs that used to get through


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
    errors = sq.check_inputs("nx-os", NX_PORTS, names, ecn)[0]
    assert len(errors) == 1 and errors[0].startswith(message), errors


def test_ecn_thresholds_given_as_digits_are_numbers() -> None:
    errors, ecn = sq.check_inputs("nx-os", NX_PORTS, {}, {"min_kbytes": "200", "max_kbytes": 4000})[::2]
    assert errors == [] and ecn == sq.Ecn(200, 4000)


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
    errors = sq.check_inputs(platform, ports, {}, {})[0]
    assert any(message in e for e in errors), errors


def test_a_port_with_leading_zeros_is_keyed_as_the_switch_keys_it() -> None:
    assert sq.interface_parts("nx-os", "Ethernet01/01") == ("eth", "eth1/1")
    assert sq.display_interface("ios-xe", "HundredGigE1/0/01") == "HundredGigE1/0/1"


# ------------------------------------------------------------------ the blueprint's design


def test_nx_os_follows_the_blueprint_by_default() -> None:
    text = sq.cli(sq.intended("nx-os", QOS, NX_PORTS, NAMES, ECN))
    assert "class-map type qos match-all ROCE-CNP\n match dscp 48\n" in text
    assert (
        "policy-map type qos ROCE-IN\n class ROCE\n  set qos-group 3\n class ROCE-CNP\n  set qos-group 7\n"
        in text
    )
    assert (
        "policy-map type queuing ROCE-OUT\n class type queuing c-out-8q-q7\n  priority level 1\n"
        " class type queuing c-out-8q-q3\n  bandwidth remaining percent 60\n"
        "  random-detect minimum-threshold 150 kbytes maximum-threshold 3000 kbytes drop-probability 7 "
        "weight 0 ecn\n"
        " class type queuing c-out-8q-q-default\n  bandwidth remaining percent 40\n"
    ) in text
    assert " class type network-qos c-8q-nq-default\n  mtu 9216\n" in text
    assert "priority-flow-control watch-dog-interval on" in text
    assert "c-8q-nq0" not in text and "c-out-8q-q0" not in text


def test_strict_roce_queue_sits_below_cnp() -> None:
    strict = rq.settings({"roce_queue": "strict", "priority_level": 2})
    lines = sq.intended("nx-os", strict, NX_PORTS, NAMES, ECN)
    queuing = [line[1:] for line in lines if line[0] == "policy-map type queuing ROCE-OUT"]
    assert queuing[:2] == [
        ("class type queuing c-out-8q-q7", "priority level 1"),
        ("class type queuing c-out-8q-q3", "priority level 2"),
    ]
    assert rq.errors({"roce_queue": "strict"}) == [
        "roce_qos.roce_queue strict puts RoCE on a strict queue below the CNP queue (level 1): set "
        "priority_level 2"
    ]


def test_ios_xe_gives_cnp_the_priority_queue_and_roce_a_share() -> None:
    lines = sq.intended("ios-xe", QOS, XE_PORTS, NAMES, ECN)
    assert ("policy-map ROCE-OUT", "class ROCE-CNP-QG", "priority level 1") in lines
    assert ("policy-map ROCE-OUT", "class ROCE-QG", "bandwidth remaining percent 60") in lines
    assert ("class-map match-any ROCE-CNP", "match dscp 48") in lines


def test_qos_group_0_on_nx_os_is_refused_with_the_reason() -> None:
    qos = rq.settings({"qos_group": 0})
    errors = sq.check_inputs("nx-os", NX_PORTS, {}, {}, qos)[0]
    assert errors == [
        "roce_qos.qos_group 0 is NX-OS's default class (c-8q-nq-default), which carries all unclassified "
        "traffic: RoCE and CNP need classes of their own, pick 1..7"
    ]
    assert sq.check_inputs("ios-xe", XE_PORTS, {}, {}, qos)[0] == []


def test_roce_and_cnp_must_be_two_classes() -> None:
    assert rq.errors({"cnp_dscp": 26}) == [
        "roce_qos.dscp and roce_qos.cnp_dscp must differ (RoCE data and CNP are two classes), both 26"
    ]
    assert rq.errors({"qos_group": 7})[0].startswith(
        "roce_qos.qos_group and roce_qos.cnp_qos_group must differ"
    )
