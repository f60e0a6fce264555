# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""RoCE QoS on Cisco switches as NETCONF payloads, and running configuration read back as CLI lines.

Pure Python (xml.etree only). ``intended(platform, ...)`` and ``running(platform, xml)`` both give
a set of CLI-like lines (tuples: section, sub-section, line), so comparing the two is comparing sets,
after normalising what devices return differently (DSCP ``af31`` is 26) and applying the models' defaults:
a leaf the reply leaves out reads as its YANG default (with-defaults ``trim`` leaves out every leaf equal to
its default, so NX-OS network-qos ``mtu 1500`` comes back as an empty ``mtu-items``), and a leaf the parser
does not know counts only when it differs from its default (a ``report-all`` reply carries them all).
``edit_config`` renders the payload that makes running equal to intended for the objects the role owns (its
class-maps and policy-maps are replaced whole; on the interfaces only the leaves it sets are touched).

The design follows Cisco's data center networking blueprint for AI/ML (docs/switch_qos.md): RoCE data and
congestion notification packets (CNP) classified by DSCP into two qos-groups; CNP on the strict-priority
queue; RoCE lossless (PFC) on a weighted queue with WRED/ECN (or, with ``roce_queue: strict``, on a strict
queue below CNP); jumbo MTU on the RoCE class and the default class; PFC and its watchdog on the ports.

Models: IOS-XE 17.x Cisco-IOS-XE-native + Cisco-IOS-XE-policy; NX-OS 9.3/10.3 Cisco-NX-OS-device.
IOS-XE has no YANG node for priority-flow-control in any release: ``manual_steps`` says so instead
of pretending.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, fields
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.qos.roce import whole

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
# NX-OS ipqos_PriorFlowCtrlMode and ipqos_PriorFlowCtrlWdIntvl: the enumerations of Cisco-NX-OS-device.yang
# of NX-OS 10.3(10) (YangModels/yang vendor/cisco/nx/10.3-10): mode auto=0 (the default), on=1, off=2;
# watch-dog-interval on=1, off=2 (the default). NX-OS 9.3 types both leaves as a bare uint8.
PFC_MODES = {0: "auto", 1: "on", 2: "off"}
PFC_MODE_ON = 1
PFC_WATCHDOG = {1: "on", 2: "off"}
PFC_WATCHDOG_ON, PFC_WATCHDOG_OFF = 1, 2

# IOS-XE interface lists the role writes to (name = the numbers after the type).
XE_IF_TYPES = (
    "HundredGigE",
    "FourHundredGigE",
    "FiftyGigabitEthernet",
    "FortyGigabitEthernet",
    "TwentyFiveGigE",
    "TenGigabitEthernet",
)
# ASCII digits only ([0-9], not \d, which takes any Unicode digit) and fullmatch (a trailing newline is
# not part of a name).
XE_IF_RE = re.compile(r"(" + "|".join(XE_IF_TYPES) + r")([0-9]+(?:/[0-9]+){0,3})")
NX_IF_RE = re.compile(r"(?:[Ee][Tt][Hh](?:[Ee][Rr][Nn][Ee][Tt])?)([0-9]+(?:/[0-9]+){1,2})")
NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,39}")
# Upper bounds of the NX-OS model (ipqos_ThreshVal, ipqos_DropAvailRange, ipqos_Weight).
ECN_RANGES = {
    "min_kbytes": (0, 52428800),
    "max_kbytes": (0, 52428800),
    "drop_probability": (0, 100),
    "weight": (0, 15),
}

Line = tuple[str, ...]


class SwitchQosError(Exception):
    """A bad input; the message names the value."""


@dataclass(frozen=True)
class Names:
    """Names of the objects the role owns on the switch."""

    class_map: str = "ROCE"
    cnp_class_map: str = "ROCE-CNP"
    input_policy: str = "ROCE-IN"
    # IOS-XE: the egress class-maps on the qos-groups and the egress policy. NX-OS: the network-qos and
    # queuing policy-maps (their classes are the system classes of the qos-groups).
    group_class_map: str = "ROCE-QG"
    cnp_group_class_map: str = "ROCE-CNP-QG"
    output_policy: str = "ROCE-OUT"
    network_qos_policy: str = "ROCE-NQ"


@dataclass(frozen=True)
class Ecn:
    """WRED/ECN thresholds of the RoCE queue (NX-OS), in kbytes (the blueprint's 100G example)."""

    min_kbytes: int = 150
    max_kbytes: int = 3000
    drop_probability: int = 7
    weight: int = 0


def _q(ns: str, tag: str) -> str:
    return f"{{{ns}}}{tag}"


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _shown(value: Any) -> str:
    # str(): a plain str, so an Ansible-tagged string reads like any other in the message.
    return repr(str(value)) if isinstance(value, str) else repr(value)


# ---------------------------------------------------------------- inputs


def _numbers(text: str) -> str:
    """'01/001' -> '1/1': the device keys ports by their numbers, so leading zeros name the same port."""
    return "/".join(str(int(n)) for n in text.split("/"))


def interface_parts(platform: str, name: str) -> tuple[str, str]:
    """(list or type, key) of an interface as the platform's model keys it; SwitchQosError if not one."""
    if platform == "ios-xe":
        m = XE_IF_RE.fullmatch(name)
        if not m:
            raise SwitchQosError(
                f"interface {name!r} is not an IOS-XE interface name like HundredGigE1/0/1 "
                f"(types: {', '.join(XE_IF_TYPES)})"
            )
        return m.group(1), _numbers(m.group(2))
    m = NX_IF_RE.fullmatch(name)
    if not m:
        raise SwitchQosError(f"interface {name!r} is not an NX-OS interface name like Ethernet1/1")
    return "eth", f"eth{_numbers(m.group(1))}"


def display_interface(platform: str, name: str) -> str:
    kind, key = interface_parts(platform, name)
    return f"{kind}{key}" if platform == "ios-xe" else "Ethernet" + key[3:]


def _group_errors(platform: str, qos: dict[str, Any]) -> list[str]:
    if platform != "nx-os":
        return []
    # NX-OS maps qos-group N to its system classes c-8q-nqN / c-out-8q-qN; qos-group 0 is the default class
    # (c-8q-nq-default, c-out-8q-q-default), which carries all unclassified traffic: there is no c-8q-nq0,
    # and PFC there would pause every flow that is not RoCE.
    return [
        f"roce_qos.{key} 0 is NX-OS's default class (c-8q-nq-default), which carries all unclassified "
        "traffic: RoCE and CNP need classes of their own, pick 1..7"
        for key in ("qos_group", "cnp_qos_group")
        if qos.get(key) == 0
    ]


def check_inputs(
    platform: Any, interfaces: Any, names: Any, ecn: Any, qos: dict[str, Any] | None = None
) -> tuple[list[str], Names, Ecn]:
    """Every problem with the raw inputs (as the role or the module got them), and the objects they make.

    The one check that the switch_qos role's validate phase and the switch_qos module both run: bad types are
    named like bad values, never a TypeError.
    """
    if not isinstance(platform, str) or platform not in PLATFORMS:
        return (
            [f"switch_qos_platform {_shown(platform)} is not one of {', '.join(PLATFORMS)}"],
            Names(),
            Ecn(),
        )
    out: list[str] = []
    n, problems = _names(names)
    out += problems
    e, problems = _ecn(ecn)
    out += problems
    if not isinstance(interfaces, list):
        out.append(f"switch_qos_interfaces must be a list of port names, got {_shown(interfaces)}")
    else:
        out += _interface_errors(platform, interfaces)
    out += _group_errors(platform, qos or {})
    return out, n, e


def _names(names: Any) -> tuple[Names, list[str]]:
    if names is None:
        names = {}
    if not isinstance(names, dict):
        return Names(), [f"switch_qos_names must be a mapping of object names, got {_shown(names)}"]
    known = [f.name for f in fields(Names)]
    out = [
        f"switch_qos_names.{k} is not a name the role owns (known: {', '.join(known)})"
        for k in names
        if k not in known
    ]
    given = {k: v for k, v in names.items() if k in known}
    for key, value in given.items():
        if not isinstance(value, str) or not NAME_RE.fullmatch(value):
            out.append(f"switch_qos_names.{key} {_shown(value)} is not a name of 1-40 letters, digits, _ . -")
    merged = {**vars(Names()), **{k: str(v) for k, v in given.items()}}
    if len(set(merged.values())) != len(merged):
        out.append(f"switch_qos_names must all differ, got {merged}")
    return (Names(), out) if out else (Names(**merged), out)


def _ecn(ecn: Any) -> tuple[Ecn, list[str]]:
    if ecn is None:
        ecn = {}
    if not isinstance(ecn, dict):
        return Ecn(), [f"switch_qos_ecn must be a mapping of thresholds, got {_shown(ecn)}"]
    out = [
        f"switch_qos_ecn.{k} is not a threshold (known: {', '.join(ECN_RANGES)})"
        for k in ecn
        if k not in ECN_RANGES
    ]
    values: dict[str, int] = {}
    for key, (low, high) in ECN_RANGES.items():
        if key not in ecn:
            continue
        number = whole(ecn[key])
        if number is None or not low <= number <= high:
            unit = " kbytes" if key.endswith("kbytes") else ""
            out.append(
                f"switch_qos_ecn.{key} must be a whole number {low}..{high}{unit}, got {_shown(ecn[key])}"
            )
        else:
            values[key] = number
    if out:
        return Ecn(), out
    e = Ecn(**values)
    if not e.min_kbytes < e.max_kbytes:
        out.append(f"ECN thresholds must satisfy 0 <= min < max, got {e.min_kbytes}..{e.max_kbytes} kbytes")
    return e, out


def _interface_errors(platform: str, interfaces: list[Any]) -> list[str]:
    out: list[str] = []
    if not interfaces:
        out.append("switch_qos_interfaces is empty: list the switch ports that face the RoCE hosts")
    seen: dict[str, str] = {}
    for index, name in enumerate(interfaces):
        if not isinstance(name, str):
            out.append(f"switch_qos_interfaces[{index}] must be a port name (a string), got {_shown(name)}")
            continue
        try:
            shown = display_interface(platform, name)
        except SwitchQosError as exc:
            out.append(str(exc))
            continue
        if shown in seen:
            out.append(f"interface {name!r} is listed twice (also as {seen[shown]!r})")
        seen.setdefault(shown, name)
    return out


def input_errors(platform: str, interfaces: list[str], names: Names, ecn: Ecn) -> list[str]:
    """Every problem with already-typed inputs (see check_inputs for raw ones)."""
    return check_inputs(platform, list(interfaces), vars(names), vars(ecn))[0]


def unknown_interfaces(platform: str, wanted: list[str], present: set[str]) -> list[str]:
    """The wanted interfaces (as displayed) that the switch does not have."""
    return [display_interface(platform, w) for w in wanted if display_interface(platform, w) not in present]


# ---------------------------------------------------------------- intended, as lines


def nx_class(kind: str, group: int) -> str:
    """The NX-OS 8-queue system class of a qos-group: network-qos ``nq`` or queuing ``out``."""
    suffix = "-default" if group == 0 else str(group)
    return f"c-8q-nq{suffix}" if kind == "nq" else f"c-out-8q-q{suffix}"


def _queues(qos: dict[str, Any]) -> list[tuple[int, list[str]]]:
    """(qos-group, egress actions) per owned queue, CNP first: the blueprint's weighted design by default."""
    level = qos["priority_level"]
    if qos["roce_queue"] == "strict":
        # RoCE on a strict queue below CNP's (level 1): the design before the blueprint.
        return [(qos["cnp_qos_group"], ["priority level 1"]), (qos["qos_group"], [f"priority level {level}"])]
    share = qos["bandwidth_percent"]
    return [
        (qos["cnp_qos_group"], [f"priority level {level}"]),
        (qos["qos_group"], [f"bandwidth remaining percent {share}"]),
        (0, [f"bandwidth remaining percent {100 - share}"]),
    ]


def intended(platform: str, qos: dict[str, Any], interfaces: list[str], names: Names, ecn: Ecn) -> list[Line]:
    """The CLI lines the role owns, in the order a device shows them."""
    dscp, cos, group, mtu = qos["dscp"], qos["cos"], qos["qos_group"], qos["mtu"]
    cnp_dscp, cnp_group = qos["cnp_dscp"], qos["cnp_qos_group"]
    lines: list[Line] = []
    if platform == "ios-xe":
        for cm, match in (
            (names.class_map, f"match dscp {dscp}"),
            (names.cnp_class_map, f"match dscp {cnp_dscp}"),
            (names.group_class_map, f"match qos-group {group}"),
            (names.cnp_group_class_map, f"match qos-group {cnp_group}"),
        ):
            lines.append((f"class-map match-any {cm}", match))
        pin, pout = f"policy-map {names.input_policy}", f"policy-map {names.output_policy}"
        lines += [(pin, f"class {names.class_map}", f"set qos-group {group}")]
        lines += [(pin, f"class {names.cnp_class_map}", f"set qos-group {cnp_group}")]
        by_group = {group: names.group_class_map, cnp_group: names.cnp_group_class_map}
        for g, actions in _queues(qos):
            if g in by_group:
                lines += [(pout, f"class {by_group[g]}", a) for a in actions]
        for name in interfaces:
            intf = f"interface {display_interface(platform, name)}"
            lines += [
                (intf, f"mtu {mtu}"),
                (intf, f"service-policy input {names.input_policy}"),
                (intf, f"service-policy output {names.output_policy}"),
            ]
        return lines
    lines += [(f"class-map type qos match-all {names.class_map}", f"match dscp {dscp}")]
    lines += [(f"class-map type qos match-all {names.cnp_class_map}", f"match dscp {cnp_dscp}")]
    pin = f"policy-map type qos {names.input_policy}"
    lines += [(pin, f"class {names.class_map}", f"set qos-group {group}")]
    lines += [(pin, f"class {names.cnp_class_map}", f"set qos-group {cnp_group}")]
    pnq = f"policy-map type network-qos {names.network_qos_policy}"
    lines += [(pnq, f"class type network-qos {nx_class('nq', group)}", f"pause pfc-cos {cos}")]
    lines += [(pnq, f"class type network-qos {nx_class('nq', group)}", f"mtu {mtu}")]
    # Jumbo frames of other traffic (TCP between the same hosts) must not be dropped in the default class.
    lines += [(pnq, f"class type network-qos {nx_class('nq', 0)}", f"mtu {mtu}")]
    pq = f"policy-map type queuing {names.output_policy}"
    for g, actions in _queues(qos):
        cls = f"class type queuing {nx_class('out', g)}"
        lines += [(pq, cls, a) for a in actions]
        if g == group and qos["ecn"]:
            lines += [(pq, cls, _random_detect(ecn))]
    lines += [
        ("system qos", f"service-policy type network-qos {names.network_qos_policy}"),
        ("system qos", f"service-policy type queuing output {names.output_policy}"),
    ]
    watchdog = "on" if qos["pfc_watchdog"] else "off"
    for name in interfaces:
        intf = f"interface {display_interface(platform, name)}"
        lines += [
            (intf, "priority-flow-control mode on"),
            (intf, f"priority-flow-control watch-dog-interval {watchdog}"),
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
        "IOS-XE: ECN/WRED on the RoCE queue and the PFC watchdog are not configured by this role",
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
        for g, actions in _queues(qos):
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
    for g, actions in _queues(qos):
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


# ---------------------------------------------------------------- running, as lines

# NX-OS leaves the parser does not read itself, with their YANG defaults (Cisco-NX-OS-device 9.3): a
# report-all reply carries them in every class, and a leaf at its default says nothing. Keyed by
# (container, leaf); a test checks the table against the real model (tests/.../test_switch_yang.py).
NX_GENERIC_DEFAULTS: dict[tuple[str, str], str] = {
    ("QueueLimit-items", "QueueLimitUnit"): "none",
    ("QueueLimit-items", "QueueLimitVal"): "0",
    ("RandDetNonEcn-items", "maxThresholdNonEcn"): "0",
    ("RandDetNonEcn-items", "maxThresholdUnitNonEcn"): "none",
    ("RandDetNonEcn-items", "minThresholdNonEcn"): "0",
    ("RandDetNonEcn-items", "minThresholdUnitNonEcn"): "none",
    ("police-items", "bcUnit"): "unspecified",
    ("police-items", "beUnit"): "unspecified",
    ("police-items", "cirUnit"): "unspecified",
    ("police-items", "pirUnit"): "unspecified",
    ("police-items", "conformSetDscpTransmit"): "0",
    ("police-items", "exceedSetDscpTransmit"): "0",
    ("police-items", "violateSetDscpTransmit"): "0",
    ("setDscp-items", "val"): "0",
    ("shape-items", "maxRateUnit"): "unspecified",
    ("shape-items", "minRateUnit"): "unspecified",
    ("pause-items", "bufferSize"): "12582913",
    ("RandDet-items", "optimization"): "0",
    ("RandDet-items", "minThreshold"): "0",
    ("RandDet-items", "maxThreshold"): "0",
    ("RandDet-items", "minThresholdUnit"): "none",
    ("RandDet-items", "maxThresholdUnit"): "none",
    ("mtu-items", "value"): "1500",
    ("prio-items", "level"): "1",
}
# Leaves of the role's own with their defaults: read as the default when the reply leaves them out.
NX_MTU_DEFAULT = 1500  # ipqos_MTU (network-qos class) and l1_Mtu (port)
NX_PRIORITY_LEVEL_DEFAULT = 1  # ipqos_PriorityLevel in 9.3 (10.3 has no default)
NX_RANDDET_DEFAULTS = {
    "minThreshold": "0",
    "maxThreshold": "0",
    "minThresholdUnit": "none",
    "maxThresholdUnit": "none",
    "dropAvail": "0",
    "weight": "0",
    "ecn": "false",
}


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


def _generic(el: ET.Element, skip: set[str], defaults: dict[tuple[str, str], str] | None = None) -> list[str]:
    """Leaves the parser does not know, as 'tag value' lines so they count as differences; a leaf equal to
    its model default (``defaults``, keyed by its parent container and name) says nothing and is left out."""
    out = []
    parent = _local(el.tag)
    for c in el:
        tag = _local(c.tag)
        if tag in skip:
            continue
        if len(c):
            out += [f"{tag} {line}" for line in _generic(c, set(), defaults)]
        elif (defaults or {}).get((parent, tag)) != _text(c):
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


def _xe_actions(act: ET.Element) -> list[str]:
    kind = _text(_child(act, "action-type"))
    if kind == "set" and _child(act, "set", "qos-group", "qos-group-value") is not None:
        return [f"set qos-group {int(_text(_child(act, 'set', 'qos-group', 'qos-group-value')))}"]
    if kind == "priority":
        level = _text(_child(act, "priority", "level"))
        return [f"priority level {int(level)}" if level else "priority"]
    rem = _child(act, "bandwidth", "remaining")
    if (
        kind == "bandwidth"
        and _text(_child(rem, "rem-option")) == "percent"
        and _text(_child(rem, "percent"))
    ):
        return [f"bandwidth remaining percent {int(_text(_child(rem, 'percent')))}"]
    return [f"{kind} {g}" for g in _generic(act, {"action-type"})] or [kind]


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
    owned_cm = {names.class_map, names.cnp_class_map, names.group_class_map, names.cnp_group_class_map}
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
            body = [b for act in _children(cls, "action-list") for b in _xe_actions(act)]
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
        if name not in (names.class_map, names.cnp_class_map):
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
        body += _generic(cm, {"name", "matchType", "dscp-items", "grp-items"}, NX_GENERIC_DEFAULTS)
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
                body = _nx_class_actions(mc, kind)
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
        # Defaults applied: a port left out of a trimmed reply has PFC auto, no watchdog, MTU 1500.
        mode = _text(_child(phys, "priorflowctrl-items", "mode")) or "0"
        lines.append((head, f"priority-flow-control mode {PFC_MODES.get(int(mode), mode)}"))
        wd = _text(_child(phys, "priorflowctrlwd-items", "watchDogInterval")) or str(PFC_WATCHDOG_OFF)
        lines.append((head, f"priority-flow-control watch-dog-interval {PFC_WATCHDOG.get(int(wd), wd)}"))
        lines.append((head, f"mtu {int(_text(_child(phys, 'mtu')) or NX_MTU_DEFAULT)}"))
    return lines, ports


def _nx_class_actions(mc: ET.Element, kind: str) -> list[str]:
    """A class's actions as CLI lines, the model's defaults applied to the leaves this kind of policy uses."""
    body = []
    known = {"name"}
    if kind == "qos":
        known.add("setGrp-items")
        grp = _text(_child(mc, "setGrp-items", "id"))
        if grp:
            body.append(f"set qos-group {int(grp)}")
    if kind == "network-qos":
        known |= {"pause-items", "mtu-items"}
        pause = _child(mc, "pause-items")
        for leaf in pause if pause is not None else []:
            tag = _local(leaf.tag)
            if tag.startswith("pfcCos") and _text(leaf) == "true":
                body.append(f"pause pfc-cos {tag[len('pfcCos') :]}")
        if pause is not None:
            body += [
                f"pause-items {g}"
                for g in _generic(pause, set(), NX_GENERIC_DEFAULTS)
                if not g.startswith("pfcCos")
            ]
        # Every network-qos class has an MTU: 1500 unless set (a trimmed reply leaves 1500 out).
        body.append(f"mtu {int(_text(_child(mc, 'mtu-items', 'value')) or NX_MTU_DEFAULT)}")
    if kind == "queuing":
        known |= {"prio-items", "setRemBW-items", "RandDet-items"}
        share = _text(_child(mc, "setRemBW-items", "val"))
        level = _text(_child(mc, "prio-items", "level")) or str(NX_PRIORITY_LEVEL_DEFAULT)
        # A class is strict or weighted, never both: beside a bandwidth share, a priority level at its default
        # is the model's filler (a report-all reply gives every class a prio-items), not a priority.
        if _child(mc, "prio-items") is not None and not (share and int(level) == NX_PRIORITY_LEVEL_DEFAULT):
            body.append(f"priority level {int(level)}")
        if share:
            body.append(f"bandwidth remaining percent {int(share)}")
        rd = _child(mc, "RandDet-items")
        if rd is not None:
            v = {**NX_RANDDET_DEFAULTS, **{_local(c.tag): _text(c) for c in rd}}
            if (v["minThreshold"], v["maxThreshold"]) != ("0", "0") or v["ecn"] == "true":
                body.append(
                    f"random-detect minimum-threshold {v['minThreshold']} {v['minThresholdUnit']} "
                    f"maximum-threshold {v['maxThreshold']} {v['maxThresholdUnit']} "
                    f"drop-probability {v['dropAvail']} weight {v['weight']}"
                    + (" ecn" if v["ecn"] == "true" else "")
                )
            body += [
                f"RandDet-items {g}" for g in _generic(rd, set(NX_RANDDET_DEFAULTS), NX_GENERIC_DEFAULTS)
            ]
    body += _generic(mc, known, NX_GENERIC_DEFAULTS)
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
