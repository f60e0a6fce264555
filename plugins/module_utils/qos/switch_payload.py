# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The XML the switch_qos role sends: the edit-config payload and the subtree filter of its reads.

``data_tree`` renders the intended configuration as the platform's model holds it (<native> on IOS-XE,
<System> on NX-OS); ``edit_config`` wraps it so that running ends equal to ``switch_lines.intended`` for the
objects the role owns (its class-maps and policy-maps are replaced whole; on the interfaces only the leaves it
sets are touched); ``get_filter`` selects exactly those objects (and every port's name) for the read-back.
Pure Python (xml.etree only).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.qos.switch_inputs import (
    XE_IF_TYPES,
    Ecn,
    Names,
    interface_parts,
)
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos.switch_lines import nx_class, queues
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos.switch_models import (
    NC,
    NX,
    PFC_MODE_ON,
    PFC_WATCHDOG_OFF,
    PFC_WATCHDOG_ON,
    XE,
    XE_POLICY,
)


def _q(ns: str, tag: str) -> str:
    return f"{{{ns}}}{tag}"


def _sub(parent: ET.Element, ns: str, tag: str, text: Any = None, **attrs: str) -> ET.Element:
    el = ET.SubElement(parent, _q(ns, tag), attrs)
    if text is not None:
        el.text = str(text)
    return el


def _path(parent: ET.Element, ns: str, path: str, text: Any = None, **attrs: str) -> ET.Element:
    """Nested children along 'a/b/c' (all new); text and attributes go on the last one."""
    *inner, last = path.split("/")
    for tag in inner:
        parent = _sub(parent, ns, tag)
    return _sub(parent, ns, last, text, **attrs)


_REPLACE = {_q(NC, "operation"): "replace"}


def _nx_policy_map(parent: ET.Element, name: str, rep: dict[str, str]) -> ET.Element:
    """NX-OS: the policy map NAME (PMapInst) under dflt-items (qos), nw-items (network-qos), queuing-items."""
    pmap = _path(parent, NX, "p-items/name-items/PMapInst-list", **rep)
    _sub(pmap, NX, "name", name)
    return pmap


def _nx_system_policy(parent: ET.Element, direction: str, name: str, rep: dict[str, str]) -> None:
    """NX-OS: `system qos` `service-policy type network-qos|queuing input|output NAME` (DIRECTION in|out)."""
    _path(_path(parent, NX, f"policy-items/{direction}-items/sys-items/pmap-items", **rep), NX, "name", name)


def edit_config(platform: str, qos: dict[str, Any], interfaces: list[str], names: Names, ecn: Ecn) -> str:
    """The <config> payload of edit-config that makes running hold exactly the intended lines."""
    config = ET.Element(_q(NC, "config"))
    config.append(data_tree(platform, qos, interfaces, names, ecn, operations=True))
    return ET.tostring(config, encoding="unicode")


def _xe_action(cls: ET.Element, action: str) -> None:
    act = _sub(cls, XE_POLICY, "action-list")
    if action.startswith("priority level "):
        _sub(act, XE_POLICY, "action-type", "priority")
        _path(act, XE_POLICY, "priority/level", action.rsplit(" ", 1)[1])
    else:  # bandwidth remaining percent N
        _sub(act, XE_POLICY, "action-type", "bandwidth")
        rem = _path(act, XE_POLICY, "bandwidth/remaining")
        _sub(rem, XE_POLICY, "rem-option", "percent")
        _sub(rem, XE_POLICY, "percent", action.rsplit(" ", 1)[1])


def _nx_action(mc: ET.Element, action: str) -> None:
    if action.startswith("priority level "):
        _path(mc, NX, "prio-items/level", action.rsplit(" ", 1)[1])
    else:  # bandwidth remaining percent N
        _path(mc, NX, "setRemBW-items/val", action.rsplit(" ", 1)[1])


def data_tree(
    platform: str,
    qos: dict[str, Any],
    interfaces: list[str],
    names: Names,
    ecn: Ecn,
    operations: bool = False,
) -> ET.Element:
    """The data tree (<native> or <System>); with operations, owned objects carry operation=replace."""
    rep = _REPLACE if operations else {}
    group, cnp_group = qos["qos_group"], qos["cnp_qos_group"]
    if platform == "ios-xe":
        native = ET.Element(_q(XE, "native"))
        intf = _sub(native, XE, "interface")
        for name in interfaces:
            kind, key = interface_parts(platform, name)
            entry = _sub(intf, XE, kind)
            _sub(entry, XE, "name", key)
            _sub(entry, XE, "mtu", qos["mtu"])
            sp = _sub(entry, XE_POLICY, "service-policy", **rep)
            _sub(sp, XE_POLICY, "input", names.input_policy)
            _sub(sp, XE_POLICY, "output", names.output_policy)
        policy = _sub(native, XE, "policy")
        for cm_name, match_tag, value in (
            (names.class_map, "dscp", qos["dscp"]),
            (names.cnp_class_map, "dscp", qos["cnp_dscp"]),
            (names.group_class_map, "qos-group", group),
            (names.cnp_group_class_map, "qos-group", cnp_group),
        ):
            cm = _sub(policy, XE_POLICY, "class-map", **rep)
            _sub(cm, XE_POLICY, "name", cm_name)
            _sub(cm, XE_POLICY, "prematch", "match-any")
            _path(cm, XE_POLICY, f"match/{match_tag}", value)
        pm = _sub(policy, XE_POLICY, "policy-map", **rep)
        _sub(pm, XE_POLICY, "name", names.input_policy)
        for cm_name, value in ((names.class_map, group), (names.cnp_class_map, cnp_group)):
            cls = _sub(pm, XE_POLICY, "class")
            _sub(cls, XE_POLICY, "name", cm_name)
            act = _sub(cls, XE_POLICY, "action-list")
            _sub(act, XE_POLICY, "action-type", "set")
            _path(act, XE_POLICY, "set/qos-group/qos-group-value", value)
        pm = _sub(policy, XE_POLICY, "policy-map", **rep)
        _sub(pm, XE_POLICY, "name", names.output_policy)
        by_group = {group: names.group_class_map, cnp_group: names.cnp_group_class_map}
        for g, actions in queues(qos):
            if g not in by_group:
                continue
            cls = _sub(pm, XE_POLICY, "class")
            _sub(cls, XE_POLICY, "name", by_group[g])
            for action in actions:
                _xe_action(cls, action)
        return native
    system = ET.Element(_q(NX, "System"))
    ipqos = _sub(system, NX, "ipqos-items")
    dflt = _sub(ipqos, NX, "dflt-items")
    cmaps = _path(dflt, NX, "c-items/name-items")
    for cm_name, dscp in ((names.class_map, qos["dscp"]), (names.cnp_class_map, qos["cnp_dscp"])):
        cmap = _sub(cmaps, NX, "CMapInst-list", **rep)
        _sub(cmap, NX, "name", cm_name)
        _sub(cmap, NX, "matchType", "match-all")
        _path(cmap, NX, "dscp-items/Dscp-list/val", dscp)
    pmap = _nx_policy_map(dflt, names.input_policy, rep)
    classes = _sub(pmap, NX, "cmap-items")
    for cm_name, value in ((names.class_map, group), (names.cnp_class_map, cnp_group)):
        mc = _sub(classes, NX, "MatchCMap-list")
        _sub(mc, NX, "name", cm_name)
        _path(mc, NX, "setGrp-items/id", value)
    ifs = _path(dflt, NX, "policy-items/in-items/intf-items")
    for name in interfaces:
        entry = _sub(ifs, NX, "If-list", **rep)
        _sub(entry, NX, "name", interface_parts(platform, name)[1])
        _path(entry, NX, "pmap-items/name", names.input_policy)
    nw = _sub(ipqos, NX, "nw-items")
    pmap = _nx_policy_map(nw, names.network_qos_policy, rep)
    classes = _sub(pmap, NX, "cmap-items")
    mc = _sub(classes, NX, "MatchCMap-list")
    _sub(mc, NX, "name", nx_class("nq", group))
    _path(mc, NX, f"pause-items/pfcCos{qos['cos']}", "true")
    _path(mc, NX, "mtu-items/value", qos["mtu"])
    mc = _sub(classes, NX, "MatchCMap-list")
    _sub(mc, NX, "name", nx_class("nq", 0))
    _path(mc, NX, "mtu-items/value", qos["mtu"])
    _nx_system_policy(nw, "in", names.network_qos_policy, rep)
    queuing = _sub(ipqos, NX, "queuing-items")
    pmap = _nx_policy_map(queuing, names.output_policy, rep)
    classes = _sub(pmap, NX, "cmap-items")
    for g, actions in queues(qos):
        mc = _sub(classes, NX, "MatchCMap-list")
        _sub(mc, NX, "name", nx_class("out", g))
        for action in actions:
            _nx_action(mc, action)
        if g == group and qos["ecn"]:
            rd = _sub(mc, NX, "RandDet-items")
            for tag, value in (
                ("minThreshold", ecn.min_kbytes),
                ("minThresholdUnit", "kbytes"),
                ("maxThreshold", ecn.max_kbytes),
                ("maxThresholdUnit", "kbytes"),
                ("dropAvail", ecn.drop_probability),
                ("weight", ecn.weight),
                ("ecn", "true"),
            ):
                _sub(rd, NX, tag, value)
    _nx_system_policy(queuing, "out", names.output_policy, rep)
    phys = _path(system, NX, "intf-items/phys-items")
    for name in interfaces:
        entry = _sub(phys, NX, "PhysIf-list")
        _sub(entry, NX, "id", interface_parts(platform, name)[1])
        _sub(entry, NX, "mtu", qos["mtu"])
        _path(entry, NX, "priorflowctrl-items/mode", PFC_MODE_ON)
        _path(
            entry,
            NX,
            "priorflowctrlwd-items/watchDogInterval",
            PFC_WATCHDOG_ON if qos["pfc_watchdog"] else PFC_WATCHDOG_OFF,
        )
    return system


def get_filter(platform: str, interfaces: list[str], names: Names) -> str:
    """Subtree filter selecting exactly the objects the role owns (and every port's name)."""
    if platform == "ios-xe":
        native = ET.Element(_q(XE, "native"))
        intf = _sub(native, XE, "interface")
        for kind in XE_IF_TYPES:
            entry = _sub(intf, XE, kind)
            _sub(entry, XE, "name")
            _sub(entry, XE, "mtu")
            _sub(entry, XE_POLICY, "service-policy")
        policy = _sub(native, XE, "policy")
        for cm in (names.class_map, names.cnp_class_map, names.group_class_map, names.cnp_group_class_map):
            _path(policy, XE_POLICY, "class-map/name", cm)
        for pm in (names.input_policy, names.output_policy):
            _path(policy, XE_POLICY, "policy-map/name", pm)
        return ET.tostring(native, encoding="unicode")
    system = ET.Element(_q(NX, "System"))
    ipqos = _sub(system, NX, "ipqos-items")
    for kind, policy, attach in (
        ("dflt-items", names.input_policy, "policy-items/in-items"),
        ("nw-items", names.network_qos_policy, "policy-items/in-items/sys-items"),
        ("queuing-items", names.output_policy, "policy-items/out-items/sys-items"),
    ):
        container = _sub(ipqos, NX, kind)
        if kind == "dflt-items":
            cmaps = _path(container, NX, "c-items/name-items")
            for cm in (names.class_map, names.cnp_class_map):
                _path(cmaps, NX, "CMapInst-list/name", cm)
        _path(container, NX, "p-items/name-items/PMapInst-list/name", policy)
        _path(container, NX, attach)
    phys = _path(system, NX, "intf-items/phys-items/PhysIf-list")
    for tag in ("id", "mtu", "priorflowctrl-items", "priorflowctrlwd-items"):
        _sub(phys, NX, tag)
    return ET.tostring(system, encoding="unicode")
