# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Running configuration read back: a get-config reply of either platform as the CLI-like lines of
``switch_lines``.

``running(platform, xml)`` parses the objects the role owns (IOS-XE and NX-OS each have their parser) after
normalising what devices return differently (DSCP ``af31`` is 26) and applying the models' defaults
(``switch_models``): a leaf the reply leaves out reads as its YANG default (so NX-OS network-qos ``mtu 1500``
under with-defaults ``trim`` comes back as an empty ``mtu-items``), and a leaf the parser does not know counts
only when it differs from its default. Pure Python (xml.etree only).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from ansible_collections.rdmaops.cluster.plugins.module_utils.qos.switch_inputs import Names
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos.switch_lines import Line
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos.switch_models import (
    DSCP_NAMES,
    NX,
    NX_GENERIC_DEFAULTS,
    NX_MTU_DEFAULT,
    NX_PRIORITY_LEVEL_DEFAULT,
    NX_RANDDET_DEFAULTS,
    PFC_MODES,
    PFC_WATCHDOG,
    PFC_WATCHDOG_OFF,
    XE,
)


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


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
    interfaces = _child(native, "interface")
    # not `or []`: an element's truth value is its having children (deprecated since Python 3.12)
    for kind_el in interfaces if interfaces is not None else []:
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
