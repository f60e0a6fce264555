"""module_utils/qos/switch.py and roce_qos.py: payloads, running read back as lines, inputs refused."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import roce as rq
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import switch as sq

QOS = rq.settings({})
NAMES, ECN = sq.Names(), sq.Ecn()
XE_PORTS = ["HundredGigE1/0/1", "HundredGigE1/0/2"]
NX_PORTS = ["Ethernet1/1", "eth1/2"]


def _tree(platform: str, ports: list[str], qos: dict[str, object] | None = None) -> str:
    qos = qos or QOS
    return ET.tostring(sq.data_tree(platform, qos, ports, NAMES, ECN), encoding="unicode")


def test_roce_qos_defaults_and_one_check() -> None:
    assert rq.settings(None) == {
        "dscp": 26,
        "cos": 3,
        "qos_group": 3,
        "priority_level": 1,
        "mtu": 9216,
        "ecn": True,
    }
    assert rq.settings({"dscp": "46"})["dscp"] == 46
    assert rq.nccl_ib_tc({}) == 104
    assert rq.errors({"dscp": 64, "cos": 8, "priority_level": 3, "colour": 1, "ecn": "yes"}) == [
        "roce_qos.colour is not a setting (known: dscp, cos, qos_group, priority_level, mtu, ecn)",
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
    assert "interface Ethernet1/2\n priority-flow-control mode on\n mtu 9216\n" in text
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
    assert "- policy-map ROCE-OUT / class ROCE-QG / priority level 2" in diff


def test_unknown_leaves_in_owned_objects_count_as_differences() -> None:
    root = sq.data_tree("nx-os", QOS, NX_PORTS, NAMES, ECN)
    mc = root.find(f".//{{{sq.NX}}}queuing-items//{{{sq.NX}}}MatchCMap-list")
    assert mc is not None
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
    assert replaced == [
        "service-policy",
        "service-policy",
        "class-map",
        "class-map",
        "policy-map",
        "policy-map",
    ]
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
