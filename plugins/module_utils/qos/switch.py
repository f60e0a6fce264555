# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""RoCE QoS on Cisco switches as NETCONF payloads, and running configuration read back as CLI lines.

Pure Python (xml.etree only). ``intended(platform, ...)`` and ``running(platform, xml)`` both give
a set of CLI-like lines (tuples: section, sub-section, line), so comparing the two is comparing sets,
after normalising what devices return differently (DSCP ``af31`` is 26, a missing NX-OS class
match type is ``match-all``). ``edit_config`` renders the payload that makes running equal to
intended for the objects the role owns (its class-maps and policy-maps are replaced whole; on the
interfaces only the leaves it sets are touched).

Models: IOS-XE 17.x Cisco-IOS-XE-native + Cisco-IOS-XE-policy; NX-OS 9.3 Cisco-NX-OS-device.
IOS-XE has no YANG node for priority-flow-control in any release: ``manual_steps`` says so instead
of pretending.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Any

NC = "urn:ietf:params:xml:ns:netconf:base:1.0"
XE = "http://cisco.com/ns/yang/Cisco-IOS-XE-native"
XE_POLICY = "http://cisco.com/ns/yang/Cisco-IOS-XE-policy"
NX = "http://cisco.com/ns/yang/cisco-nx-os-device"
PLATFORMS = ("ios-xe", "nx-os")

# Cisco-IOS-XE-types dscp-type enumeration (17.12.1): the names a device may return for a number.
DSCP_NAMES = {
    "default": 0, "cs1": 8, "af11": 10, "af12": 12, "af13": 14, "cs2": 16, "af21": 18, "af22": 20,
    "af23": 22, "cs3": 24, "af31": 26, "af32": 28, "af33": 30, "cs4": 32, "af41": 34, "af42": 36,
    "af43": 38, "cs5": 40, "ef": 46, "cs6": 48, "cs7": 56,
}  # fmt: skip
# NX-OS ipqos_PriorFlowCtrlMode: auto=0, on=1, off=2 (NX-API REST guide 9.3x; names in the 10.3 model).
PFC_MODES = {0: "auto", 1: "on", 2: "off"}
PFC_MODE_ON = 1
NX_MATCH_TYPES = {"match-any", "match-all", "match-first"}

# IOS-XE interface lists the role writes to (name = the numbers after the type).
XE_IF_TYPES = (
    "HundredGigE",
    "FourHundredGigE",
    "FiftyGigabitEthernet",
    "FortyGigabitEthernet",
    "TwentyFiveGigE",
    "TenGigabitEthernet",
)
XE_IF_RE = re.compile(r"^(" + "|".join(XE_IF_TYPES) + r")(\d+(?:/\d+){0,3})$")
NX_IF_RE = re.compile(r"^(?:Ethernet|eth)(\d+(?:/\d+){1,2})$", re.IGNORECASE)
NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,39}$")

Line = tuple[str, ...]


class SwitchQosError(Exception):
    """A bad input; the message names the value."""


@dataclass(frozen=True)
class Names:
    """Names of the objects the role owns on the switch."""

    class_map: str = "ROCE"
    input_policy: str = "ROCE-IN"
    # IOS-XE: the egress class-map on the qos-group and the egress policy. NX-OS: the network-qos and
    # queuing policy-maps (their classes are the system classes of the qos-group).
    group_class_map: str = "ROCE-QG"
    output_policy: str = "ROCE-OUT"
    network_qos_policy: str = "ROCE-NQ"


@dataclass(frozen=True)
class Ecn:
    """WRED/ECN thresholds of the RoCE queue (NX-OS), in kbytes."""

    min_kbytes: int = 150
    max_kbytes: int = 3000
    drop_probability: int = 7
    weight: int = 0


def _q(ns: str, tag: str) -> str:
    return f"{{{ns}}}{tag}"


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


# ---------------------------------------------------------------- inputs


def interface_parts(platform: str, name: str) -> tuple[str, str]:
    """(list or type, key) of an interface as the platform's model keys it; SwitchQosError if not one."""
    if platform == "ios-xe":
        m = XE_IF_RE.match(name)
        if not m:
            raise SwitchQosError(
                f"interface {name!r} is not an IOS-XE interface name like HundredGigE1/0/1 "
                f"(types: {', '.join(XE_IF_TYPES)})"
            )
        return m.group(1), m.group(2)
    m = NX_IF_RE.match(name)
    if not m:
        raise SwitchQosError(f"interface {name!r} is not an NX-OS interface name like Ethernet1/1")
    return "eth", f"eth{m.group(1)}"


def display_interface(platform: str, name: str) -> str:
    kind, key = interface_parts(platform, name)
    return f"{kind}{key}" if platform == "ios-xe" else "Ethernet" + key[3:]


def input_errors(platform: str, interfaces: list[str], names: Names, ecn: Ecn) -> list[str]:
    """Every problem with the inputs that needs no device: platform, interface names, object names."""
    if platform not in PLATFORMS:
        return [f"switch_qos_platform {platform!r} is not one of {', '.join(PLATFORMS)}"]
    out: list[str] = []
    if not interfaces:
        out.append("switch_qos_interfaces is empty: list the switch ports that face the RoCE hosts")
    seen: dict[str, str] = {}
    for name in interfaces:
        try:
            shown = display_interface(platform, str(name))
        except SwitchQosError as exc:
            out.append(str(exc))
            continue
        if shown in seen:
            out.append(f"interface {name!r} is listed twice (also as {seen[shown]!r})")
        seen[shown] = str(name)
    for field_name, value in vars(names).items():
        if not NAME_RE.match(value):
            out.append(
                f"switch_qos_names.{field_name} {value!r} is not a name of 1-40 letters, digits, _ . -"
            )
    if len(set(vars(names).values())) != len(vars(names)):
        out.append(f"switch_qos_names must all differ, got {vars(names)}")
    if not 0 <= ecn.min_kbytes < ecn.max_kbytes <= 52428800:
        out.append(
            f"ECN thresholds must satisfy 0 <= min < max, got {ecn.min_kbytes}..{ecn.max_kbytes} kbytes"
        )
    if not 0 <= ecn.drop_probability <= 100 or not 0 <= ecn.weight <= 15:
        out.append(f"ECN drop probability 0..100 and weight 0..15, got {ecn.drop_probability}, {ecn.weight}")
    return out


def check_inputs(platform: Any, interfaces: Any, names: Any, ecn: Any) -> tuple[list[str], Names, Ecn]:
    """Every problem with the raw inputs (as the role or the module got them), and the objects they make.

    The one check that the switch_qos role's validate phase and the switch_qos module both run.
    """
    if not isinstance(interfaces, list):
        return [f"switch_qos_interfaces must be a list of port names, got {interfaces!r}"], Names(), Ecn()
    try:
        n = Names(**(names or {}))
        e = Ecn(**(ecn or {}))
    except TypeError as exc:
        return [f"switch_qos_names / switch_qos_ecn has an unknown key: {exc}"], Names(), Ecn()
    return input_errors(str(platform), [str(i) for i in interfaces], n, e), n, e


def unknown_interfaces(platform: str, wanted: list[str], present: set[str]) -> list[str]:
    """The wanted interfaces (as displayed) that the switch does not have."""
    return [display_interface(platform, w) for w in wanted if display_interface(platform, w) not in present]


# ---------------------------------------------------------------- intended, as lines


def intended(platform: str, qos: dict[str, Any], interfaces: list[str], names: Names, ecn: Ecn) -> list[Line]:
    """The CLI lines the role owns, in the order a device shows them."""
    dscp, cos, group, level, mtu = (
        qos["dscp"],
        qos["cos"],
        qos["qos_group"],
        qos["priority_level"],
        qos["mtu"],
    )
    lines: list[Line] = []
    if platform == "ios-xe":
        cm, cmq = f"class-map match-any {names.class_map}", f"class-map match-any {names.group_class_map}"
        pin, pout = f"policy-map {names.input_policy}", f"policy-map {names.output_policy}"
        lines += [(cm, f"match dscp {dscp}"), (cmq, f"match qos-group {group}")]
        lines += [(pin, f"class {names.class_map}", f"set qos-group {group}")]
        lines += [(pout, f"class {names.group_class_map}", f"priority level {level}")]
        for name in interfaces:
            intf = f"interface {display_interface(platform, name)}"
            lines += [
                (intf, f"mtu {mtu}"),
                (intf, f"service-policy input {names.input_policy}"),
                (intf, f"service-policy output {names.output_policy}"),
            ]
        return lines
    nq, out = f"c-8q-nq{group}", f"c-out-8q-q{group}"
    lines += [(f"class-map type qos match-all {names.class_map}", f"match dscp {dscp}")]
    lines += [
        (f"policy-map type qos {names.input_policy}", f"class {names.class_map}", f"set qos-group {group}")
    ]
    pnq = f"policy-map type network-qos {names.network_qos_policy}"
    lines += [(pnq, f"class type network-qos {nq}", f"pause pfc-cos {cos}")]
    lines += [(pnq, f"class type network-qos {nq}", f"mtu {mtu}")]
    pq = f"policy-map type queuing {names.output_policy}"
    lines += [(pq, f"class type queuing {out}", f"priority level {level}")]
    if qos["ecn"]:
        lines += [(pq, f"class type queuing {out}", _random_detect(ecn))]
    lines += [
        ("system qos", f"service-policy type network-qos {names.network_qos_policy}"),
        ("system qos", f"service-policy type queuing output {names.output_policy}"),
    ]
    for name in interfaces:
        intf = f"interface {display_interface(platform, name)}"
        lines += [
            (intf, "priority-flow-control mode on"),
            (intf, f"mtu {mtu}"),
            (intf, f"service-policy type qos input {names.input_policy}"),
        ]
    return lines


def _random_detect(ecn: Ecn) -> str:
    return (
        f"random-detect minimum-threshold {ecn.min_kbytes} kbytes maximum-threshold {ecn.max_kbytes} kbytes "
        f"drop-probability {ecn.drop_probability} weight {ecn.weight} ecn"
    )


def manual_steps(platform: str, qos: dict[str, Any], interfaces: list[str]) -> list[str]:
    """What the role cannot configure over NETCONF on this platform, said plainly."""
    if platform != "ios-xe":
        return []
    ports = ", ".join(display_interface(platform, i) for i in interfaces)
    return [
        f"IOS-XE has no YANG model for priority-flow-control: PFC on CoS {qos['cos']} was NOT configured; "
        f"enable it by hand on {ports} (see your platform's QoS configuration guide)",
        "IOS-XE: ECN/WRED on the RoCE queue is not configured by this role",
    ]


# ---------------------------------------------------------------- payloads


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


def edit_config(platform: str, qos: dict[str, Any], interfaces: list[str], names: Names, ecn: Ecn) -> str:
    """The <config> payload of edit-config that makes running hold exactly the intended lines."""
    config = ET.Element(_q(NC, "config"))
    config.append(data_tree(platform, qos, interfaces, names, ecn, operations=True))
    return ET.tostring(config, encoding="unicode")


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
            (names.group_class_map, "qos-group", qos["qos_group"]),
        ):
            cm = _sub(policy, XE_POLICY, "class-map", **rep)
            _sub(cm, XE_POLICY, "name", cm_name)
            _sub(cm, XE_POLICY, "prematch", "match-any")
            _path(cm, XE_POLICY, f"match/{match_tag}", value)
        pm = _sub(policy, XE_POLICY, "policy-map", **rep)
        _sub(pm, XE_POLICY, "name", names.input_policy)
        cls = _sub(pm, XE_POLICY, "class")
        _sub(cls, XE_POLICY, "name", names.class_map)
        act = _sub(cls, XE_POLICY, "action-list")
        _sub(act, XE_POLICY, "action-type", "set")
        _path(act, XE_POLICY, "set/qos-group/qos-group-value", qos["qos_group"])
        pm = _sub(policy, XE_POLICY, "policy-map", **rep)
        _sub(pm, XE_POLICY, "name", names.output_policy)
        cls = _sub(pm, XE_POLICY, "class")
        _sub(cls, XE_POLICY, "name", names.group_class_map)
        act = _sub(cls, XE_POLICY, "action-list")
        _sub(act, XE_POLICY, "action-type", "priority")
        _path(act, XE_POLICY, "priority/level", qos["priority_level"])
        return native
    group = qos["qos_group"]
    system = ET.Element(_q(NX, "System"))
    ipqos = _sub(system, NX, "ipqos-items")
    dflt = _sub(ipqos, NX, "dflt-items")
    cmap = _path(dflt, NX, "c-items/name-items/CMapInst-list", **rep)
    _sub(cmap, NX, "name", names.class_map)
    _sub(cmap, NX, "matchType", "match-all")
    _path(cmap, NX, "dscp-items/Dscp-list/val", qos["dscp"])
    pmap = _path(dflt, NX, "p-items/name-items/PMapInst-list", **rep)
    _sub(pmap, NX, "name", names.input_policy)
    mc = _path(pmap, NX, "cmap-items/MatchCMap-list")
    _sub(mc, NX, "name", names.class_map)
    _path(mc, NX, "setGrp-items/id", group)
    ifs = _path(dflt, NX, "policy-items/in-items/intf-items")
    for name in interfaces:
        entry = _sub(ifs, NX, "If-list", **rep)
        _sub(entry, NX, "name", interface_parts(platform, name)[1])
        _path(entry, NX, "pmap-items/name", names.input_policy)
    nw = _sub(ipqos, NX, "nw-items")
    pmap = _path(nw, NX, "p-items/name-items/PMapInst-list", **rep)
    _sub(pmap, NX, "name", names.network_qos_policy)
    mc = _path(pmap, NX, "cmap-items/MatchCMap-list")
    _sub(mc, NX, "name", f"c-8q-nq{group}")
    _path(mc, NX, f"pause-items/pfcCos{qos['cos']}", "true")
    _path(mc, NX, "mtu-items/value", qos["mtu"])
    _path(
        _path(nw, NX, "policy-items/in-items/sys-items/pmap-items", **rep),
        NX,
        "name",
        names.network_qos_policy,
    )
    queuing = _sub(ipqos, NX, "queuing-items")
    pmap = _path(queuing, NX, "p-items/name-items/PMapInst-list", **rep)
    _sub(pmap, NX, "name", names.output_policy)
    mc = _path(pmap, NX, "cmap-items/MatchCMap-list")
    _sub(mc, NX, "name", f"c-out-8q-q{group}")
    _path(mc, NX, "prio-items/level", qos["priority_level"])
    if qos["ecn"]:
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
    _path(
        _path(queuing, NX, "policy-items/out-items/sys-items/pmap-items", **rep),
        NX,
        "name",
        names.output_policy,
    )
    phys = _path(system, NX, "intf-items/phys-items")
    for name in interfaces:
        entry = _sub(phys, NX, "PhysIf-list")
        _sub(entry, NX, "id", interface_parts(platform, name)[1])
        _sub(entry, NX, "mtu", qos["mtu"])
        _path(entry, NX, "priorflowctrl-items/mode", PFC_MODE_ON)
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
        for cm in (names.class_map, names.group_class_map):
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
            _path(container, NX, "c-items/name-items/CMapInst-list/name", names.class_map)
        _path(container, NX, "p-items/name-items/PMapInst-list/name", policy)
        _path(container, NX, attach)
    phys = _path(system, NX, "intf-items/phys-items/PhysIf-list")
    for tag in ("id", "mtu", "priorflowctrl-items"):
        _sub(phys, NX, tag)
    return ET.tostring(system, encoding="unicode")


# ---------------------------------------------------------------- running, as lines


def _text(el: ET.Element | None) -> str:
    return (el.text or "").strip() if el is not None else ""


def _children(el: ET.Element | None, tag: str) -> list[ET.Element]:
    return [c for c in (el if el is not None else []) if _local(c.tag) == tag]


def _child(el: ET.Element | None, *path: str) -> ET.Element | None:
    for tag in path:
        found = _children(el, tag)
        el = found[0] if found else None
    return el


def _dscp(value: str) -> str:
    return str(DSCP_NAMES.get(value.lower(), value)) if not value.isdigit() else str(int(value))


def _generic(el: ET.Element, skip: set[str]) -> list[str]:
    """Leaves the parser does not know, shown as 'tag value' so they count as differences."""
    out = []
    for c in el:
        tag = _local(c.tag)
        if tag in skip:
            continue
        if len(c):
            out += [f"{tag} {line}" for line in _generic(c, set())]
        else:
            out.append(f"{tag} {_text(c)}".rstrip())
    return out


def _root(data: str | ET.Element, ns: str, tag: str) -> ET.Element | None:
    tree = ET.fromstring(data) if isinstance(data, str) else data
    if _local(tree.tag) == tag and tree.tag.startswith(f"{{{ns}}}"):
        return tree
    return tree.find(f".//{{{ns}}}{tag}")


def running(platform: str, data: str | ET.Element, names: Names) -> tuple[list[Line], set[str]]:
    """(lines of the owned objects in a get-config reply, every interface name the switch has)."""
    return _running_xe(data, names) if platform == "ios-xe" else _running_nx(data, names)


def _running_xe(data: str | ET.Element, names: Names) -> tuple[list[Line], set[str]]:
    native = _root(data, XE, "native")
    lines: list[Line] = []
    ports: set[str] = set()
    for kind_el in _child(native, "interface") or []:
        kind = _local(kind_el.tag)
        name = _text(_child(kind_el, "name"))
        ports.add(f"{kind}{name}")
        head = f"interface {kind}{name}"
        mtu = _text(_child(kind_el, "mtu"))
        if mtu:
            lines.append((head, f"mtu {int(mtu)}"))
        sp = _child(kind_el, "service-policy")
        for direction in ("input", "output"):
            value = _text(_child(sp, direction))
            if value:
                lines.append((head, f"service-policy {direction} {value}"))
    policy = _child(native, "policy")
    owned_cm = {names.class_map, names.group_class_map}
    for cm in _children(policy, "class-map"):
        name = _text(_child(cm, "name"))
        if name not in owned_cm:
            continue
        head = f"class-map {_text(_child(cm, 'prematch')) or 'match-all'} {name}"
        match = _child(cm, "match")
        body = []
        for m in match if match is not None else []:
            tag, value = _local(m.tag), _text(m)
            body.append(f"match dscp {_dscp(value)}" if tag == "dscp" else f"match {tag} {value}".rstrip())
        body += _generic(cm, {"name", "prematch", "match"})
        lines += [(head, b) for b in body] or [(head,)]
    for pm in _children(policy, "policy-map"):
        name = _text(_child(pm, "name"))
        if name not in (names.input_policy, names.output_policy):
            continue
        head = f"policy-map {name}"
        classes = _children(pm, "class")
        if not classes:
            lines.append((head,))
        for cls in classes:
            sub = f"class {_text(_child(cls, 'name'))}"
            body = []
            for act in _children(cls, "action-list"):
                kind = _text(_child(act, "action-type"))
                if kind == "set" and _child(act, "set", "qos-group", "qos-group-value") is not None:
                    body.append(
                        f"set qos-group {int(_text(_child(act, 'set', 'qos-group', 'qos-group-value')))}"
                    )
                elif kind == "priority":
                    level = _text(_child(act, "priority", "level"))
                    body.append(f"priority level {int(level)}" if level else "priority")
                else:
                    body += [f"{kind} {g}" for g in _generic(act, {"action-type"})] or [kind]
            body += _generic(cls, {"name", "action-list"})
            lines += [(head, sub, b) for b in body] or [(head, sub)]
    return lines, ports


def _running_nx(data: str | ET.Element, names: Names) -> tuple[list[Line], set[str]]:
    system = _root(data, NX, "System")
    lines: list[Line] = []
    ipqos = _child(system, "ipqos-items")
    dflt = _child(ipqos, "dflt-items")
    for cm in _children(_child(dflt, "c-items", "name-items"), "CMapInst-list"):
        name = _text(_child(cm, "name"))
        if name != names.class_map:
            continue
        head = f"class-map type qos {_text(_child(cm, 'matchType')) or 'match-all'} {name}"
        body = [
            f"match dscp {int(_text(_child(d, 'val')))}"
            for d in _children(_child(cm, "dscp-items"), "Dscp-list")
        ]
        body += [
            f"match qos-group {int(_text(_child(g, 'id')))}"
            for g in _children(_child(cm, "grp-items"), "QoSGrp-list")
        ]
        body += _generic(cm, {"name", "matchType", "dscp-items", "grp-items"})
        lines += [(head, b) for b in body] or [(head,)]
    kinds = (
        (dflt, "qos", "", {names.input_policy}),
        (_child(ipqos, "nw-items"), "network-qos", "type network-qos ", {names.network_qos_policy}),
        (_child(ipqos, "queuing-items"), "queuing", "type queuing ", {names.output_policy}),
    )
    for container, kind, class_kind, owned in kinds:
        for pm in _children(_child(container, "p-items", "name-items"), "PMapInst-list"):
            name = _text(_child(pm, "name"))
            if name not in owned:
                continue
            head = f"policy-map type {kind} {name}"
            classes = _children(_child(pm, "cmap-items"), "MatchCMap-list")
            if not classes:
                lines.append((head,))
            for mc in classes:
                sub = f"class {class_kind}{_text(_child(mc, 'name'))}"
                body = _nx_class_actions(mc)
                lines += [(head, sub, b) for b in body] or [(head, sub)]
    for entry in _children(_child(dflt, "policy-items", "in-items", "intf-items"), "If-list"):
        pmap = _text(_child(entry, "pmap-items", "name"))
        if pmap:
            lines.append(
                (
                    f"interface Ethernet{_text(_child(entry, 'name'))[3:]}",
                    f"service-policy type qos input {pmap}",
                )
            )
    nw_sys = _text(_child(ipqos, "nw-items", "policy-items", "in-items", "sys-items", "pmap-items", "name"))
    if nw_sys:
        lines.append(("system qos", f"service-policy type network-qos {nw_sys}"))
    q_sys = _text(
        _child(ipqos, "queuing-items", "policy-items", "out-items", "sys-items", "pmap-items", "name")
    )
    if q_sys:
        lines.append(("system qos", f"service-policy type queuing output {q_sys}"))
    ports: set[str] = set()
    for phys in _children(_child(system, "intf-items", "phys-items"), "PhysIf-list"):
        key = _text(_child(phys, "id"))
        head = f"interface Ethernet{key[3:]}"
        ports.add(head[len("interface ") :])
        mode = _text(_child(phys, "priorflowctrl-items", "mode"))
        if mode:
            lines.append((head, f"priority-flow-control mode {PFC_MODES.get(int(mode), mode)}"))
        mtu = _text(_child(phys, "mtu"))
        if mtu:
            lines.append((head, f"mtu {int(mtu)}"))
    return lines, ports


def _nx_class_actions(mc: ET.Element) -> list[str]:
    body = []
    grp = _text(_child(mc, "setGrp-items", "id"))
    if grp:
        body.append(f"set qos-group {int(grp)}")
    pause = _child(mc, "pause-items")
    for leaf in pause if pause is not None else []:
        tag = _local(leaf.tag)
        if tag.startswith("pfcCos") and _text(leaf) == "true":
            body.append(f"pause pfc-cos {tag[len('pfcCos') :]}")
    mtu = _text(_child(mc, "mtu-items", "value"))
    if mtu:
        body.append(f"mtu {int(mtu)}")
    level = _text(_child(mc, "prio-items", "level"))
    if _child(mc, "prio-items") is not None:
        body.append(f"priority level {int(level or 1)}")
    rd = _child(mc, "RandDet-items")
    if rd is not None:
        v = {_local(c.tag): _text(c) for c in rd}
        low, high = v.get("minThreshold", "0"), v.get("maxThreshold", "0")
        text = (
            f"random-detect minimum-threshold {low} {v.get('minThresholdUnit', 'none')} "
            f"maximum-threshold {high} {v.get('maxThresholdUnit', 'none')} "
            f"drop-probability {v.get('dropAvail', '0')} weight {v.get('weight', '0')}"
        )
        body.append(text + (" ecn" if v.get("ecn") == "true" else ""))
    body += _generic(mc, {"name", "setGrp-items", "pause-items", "mtu-items", "prio-items", "RandDet-items"})
    return body


# ---------------------------------------------------------------- comparison


def owned_running(platform: str, lines: list[Line], interfaces: list[str]) -> list[Line]:
    """Running lines restricted to what the role owns: its objects, and the listed interfaces' QoS leaves."""
    mine = {f"interface {display_interface(platform, i)}" for i in interfaces}
    return [line for line in lines if not line[0].startswith("interface ") or line[0] in mine]


def cli(lines: list[Line]) -> str:
    """Lines as indented CLI text, sections in first-seen order (what --diff shows)."""
    out: list[str] = []
    seen: list[tuple[str, ...]] = []
    for line in lines:
        for depth in range(1, len(line) + 1):
            prefix = line[:depth]
            if prefix not in seen:
                seen.append(prefix)
                out.append(" " * (depth - 1) + prefix[-1])
    return "\n".join(out) + ("\n" if out else "")


def differences(want: list[Line], have: list[Line]) -> list[str]:
    """Human lines: what is missing on the switch (+) and what it has that is not wanted (-)."""
    have_set, want_set = set(have), set(want)
    out = [f"+ {' / '.join(line)}" for line in want if line not in have_set]
    out += [f"- {' / '.join(line)}" for line in have if line not in want_set]
    return out


def state(platform: str, lines: list[Line], interfaces: list[str]) -> dict[str, Any]:
    """What the switch's running configuration says about RoCE, per value, for verify's QoS table."""
    out: dict[str, Any] = {"dscp": [], "qos_group": [], "pause_cos": [], "priority_level": [], "ports": {}}
    for line in lines:
        last = line[-1]
        for key, prefix in (
            ("dscp", "match dscp "),
            ("qos_group", "set qos-group "),
            ("pause_cos", "pause pfc-cos "),
            ("priority_level", "priority level "),
        ):
            if last.startswith(prefix) and last[len(prefix) :].isdigit():
                value = int(last[len(prefix) :])
                if value not in out[key]:
                    out[key].append(value)
    for name in interfaces:
        shown = display_interface(platform, name)
        port: dict[str, Any] = {"mtu": None, "pfc": None, "input_policy": None}
        for line in lines:
            if line[0] != f"interface {shown}":
                continue
            text = line[-1]
            if text.startswith("mtu "):
                port["mtu"] = int(text[4:])
            elif text.startswith("priority-flow-control mode "):
                port["pfc"] = text.rsplit(" ", 1)[1]
            elif "service-policy" in text and " input " in text:
                port["input_policy"] = text.rsplit(" ", 1)[1]
        out["ports"][shown] = port
    return out
