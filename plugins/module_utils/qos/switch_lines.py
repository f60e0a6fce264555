# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The switch's RoCE QoS as CLI-like lines: what the role intends, and how running's lines compare.

A line is a tuple (section, sub-section, line). ``intended(platform, ...)`` gives the lines the role owns and
``switch_readback.running`` gives running's, so comparing the two is comparing sets (``differences``);
``owned_running`` keeps the objects and ports the role owns, ``cli`` shows lines as ``--diff`` does, and
``state`` is what verify.yml's QoS table reads.

The design follows Cisco's data center networking blueprint for AI/ML (docs/switch_qos.md): RoCE data and
congestion notification packets (CNP) classified by DSCP into two qos-groups; CNP on the strict-priority
queue; RoCE lossless (PFC) on a weighted queue with WRED/ECN (or, with ``roce_queue: strict``, on a strict
queue below CNP); jumbo MTU on the RoCE class and the default class; PFC and its watchdog on the ports.
IOS-XE has no YANG node for priority-flow-control in any release: ``manual_steps`` says so instead
of pretending.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.qos.switch_inputs import (
    Ecn,
    Names,
    display_interface,
)

Line = tuple[str, ...]


def nx_class(kind: str, group: int) -> str:
    """The NX-OS 8-queue system class of a qos-group: network-qos ``nq`` or queuing ``out``."""
    suffix = "-default" if group == 0 else str(group)
    return f"c-8q-nq{suffix}" if kind == "nq" else f"c-out-8q-q{suffix}"


def queues(qos: dict[str, Any]) -> list[tuple[int, list[str]]]:
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
        for g, actions in queues(qos):
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
    for g, actions in queues(qos):
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
