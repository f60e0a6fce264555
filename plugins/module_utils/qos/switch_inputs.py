# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The switch_qos inputs: platform, port names, the names of the objects the role owns, ECN thresholds.

``check_inputs`` is the one check that the switch_qos role's validate phase and the switch_qos module both run
on raw values (a bad type is named like a bad value). It also owns how a port name becomes the key the
platform's model uses (``interface_parts``) and the name a device shows (``display_interface``). Pure Python.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.node.values import whole

PLATFORMS = ("ios-xe", "nx-os")

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


def _shown(value: Any) -> str:
    # str(): a plain str, so an Ansible-tagged string reads like any other in the message.
    return repr(str(value)) if isinstance(value, str) else repr(value)


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
