"""module_utils/qos/switch_readback.py: a rendered payload, as a device returns it, reads back as the intended
lines; what differs is named both ways (switch_lines.differences)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import roce as rq
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import switch_inputs as si
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import switch_lines as sl
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import switch_models as sm
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import switch_payload as sp
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import switch_readback as sr

QOS = rq.settings({})
NAMES, ECN = si.Names(), si.Ecn()
XE_PORTS = ["HundredGigE1/0/1", "HundredGigE1/0/2"]
NX_PORTS = ["Ethernet1/1", "eth1/2"]


def _tree(platform: str, ports: list[str], qos: dict[str, object] | None = None) -> str:
    qos = qos or QOS
    return ET.tostring(sp.data_tree(platform, qos, ports, NAMES, ECN), encoding="unicode")


@pytest.mark.parametrize("platform,ports", [("ios-xe", XE_PORTS), ("nx-os", NX_PORTS)])
def test_rendered_tree_reads_back_as_the_intended_lines(platform: str, ports: list[str]) -> None:
    lines, have_ports = sr.running(platform, _tree(platform, ports), NAMES)
    want = sl.intended(platform, QOS, ports, NAMES, ECN)
    assert sl.differences(want, lines) == []
    assert len(have_ports) == 2


def test_dscp_names_a_device_returns_count_as_numbers() -> None:
    root = sp.data_tree("ios-xe", QOS, XE_PORTS, NAMES, ECN)
    dscp = root.find(f".//{{{sm.XE_POLICY}}}dscp")
    assert dscp is not None and dscp.text == "26"
    dscp.text = "af31"
    lines = sr.running("ios-xe", ET.tostring(root, encoding="unicode"), NAMES)[0]
    assert sl.differences(sl.intended("ios-xe", QOS, XE_PORTS, NAMES, ECN), lines) == []


def test_what_differs_is_named_both_ways() -> None:
    other = dict(QOS, dscp=46, priority_level=2)
    lines = sr.running("ios-xe", _tree("ios-xe", XE_PORTS, other), NAMES)[0]
    diff = sl.differences(sl.intended("ios-xe", QOS, XE_PORTS, NAMES, ECN), lines)
    assert "+ class-map match-any ROCE / match dscp 26" in diff
    assert "- class-map match-any ROCE / match dscp 46" in diff
    assert "- policy-map ROCE-OUT / class ROCE-CNP-QG / priority level 2" in diff


def test_unknown_leaves_in_owned_objects_count_as_differences() -> None:
    root = sp.data_tree("nx-os", QOS, NX_PORTS, NAMES, ECN)
    mc = next(
        el
        for el in root.iter(f"{{{sm.NX}}}MatchCMap-list")
        if el.findtext(f"{{{sm.NX}}}name") == "c-out-8q-q3"
    )
    ET.SubElement(ET.SubElement(mc, f"{{{sm.NX}}}setBW-items"), f"{{{sm.NX}}}val").text = "50"
    lines = sr.running("nx-os", root, NAMES)[0]
    diff = sl.differences(sl.intended("nx-os", QOS, NX_PORTS, NAMES, ECN), lines)
    assert diff == [
        "- policy-map type queuing ROCE-OUT / class type queuing c-out-8q-q3 / setBW-items val 50"
    ]


def test_other_objects_and_unlisted_ports_are_not_ours() -> None:
    lines, ports = sr.running("ios-xe", _tree("ios-xe", XE_PORTS), NAMES)
    owned = sl.owned_running("ios-xe", lines, ["HundredGigE1/0/1"])
    assert all("1/0/2" not in line[0] for line in owned)
    assert si.unknown_interfaces("ios-xe", ["HundredGigE1/0/1", "HundredGigE1/0/9"], ports) == [
        "HundredGigE1/0/9"
    ]
