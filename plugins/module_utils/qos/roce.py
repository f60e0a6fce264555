# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one definition of the fabric's RoCE QoS numbers, and their one check.

Switches (switch_qos), host NICs (dcb) and NCCL (NCCL_IB_TC) all read ``roce_qos`` through
``settings()``: when they disagree, RoCE drops packets, so there is exactly one place with the
defaults and one validation. Pure Python.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.node.values import whole

# The reference fabric, after Cisco's data center networking blueprint for AI/ML (docs/switch_qos.md):
# RoCE marked DSCP 26 (AF31) in qos-group 3, lossless (PFC) on CoS 3, a weighted egress queue
# (``bandwidth_percent`` of what the strict queue leaves) with WRED/ECN marking; congestion notification
# packets (CNP, DSCP 48) in qos-group 7 on the strict-priority queue at ``priority_level``; jumbo frames; the
# PFC watchdog on the RoCE ports. ``roce_queue: strict`` puts RoCE itself on a strict queue (below CNP).
DEFAULTS: dict[str, Any] = {
    "dscp": 26,
    "cos": 3,
    "qos_group": 3,
    "priority_level": 1,
    "mtu": 9216,
    "ecn": True,
    "cnp_dscp": 48,
    "cnp_qos_group": 7,
    "roce_queue": "weighted",
    "bandwidth_percent": 60,
    "pfc_watchdog": True,
}

# Ranges every supported platform accepts: qos-group 0..7 (NX-OS has 8 queues; IOS-XE takes 0..99),
# priority level 1..2 (IOS-XE's model allows no more), MTU 1500..9216 (NX-OS interfaces stop at 9216).
RANGES: dict[str, tuple[int, int]] = {
    "dscp": (0, 63),
    "cos": (0, 7),
    "qos_group": (0, 7),
    "priority_level": (1, 2),
    "mtu": (1500, 9216),
    "cnp_dscp": (0, 63),
    "cnp_qos_group": (0, 7),
    # The RoCE queue's share of what the strict queue leaves; the default class gets the rest.
    "bandwidth_percent": (1, 99),
}
BOOLEANS = ("ecn", "pfc_watchdog")
ROCE_QUEUES = ("weighted", "strict")


def _shown(value: Any) -> str:
    # str(): a plain str, so an Ansible-tagged string reads like any other in the message.
    return repr(str(value)) if isinstance(value, str) else repr(value)


def _typed(key: str, value: Any) -> Any:
    return value if key in BOOLEANS or key == "roce_queue" else whole(value)


def integer_errors(value: Any, name: str, low: int, high: int) -> list[str]:
    """The one range rule: a whole number (an int, or a string of digits) in low..high."""
    number = whole(value)
    if number is not None and low <= number <= high:
        return []
    return [f"{name} must be an integer {low}..{high}, got {_shown(value)}"]


def errors(value: Any, name: str = "roce_qos") -> list[str]:
    """Every problem with a roce_qos dict (partial dicts are fine: the rest comes from DEFAULTS)."""
    if value is None:
        return []
    if not isinstance(value, dict):
        return [f"{name} must be a mapping like {DEFAULTS}, got {_shown(value)}"]
    out: list[str] = []
    for key in sorted(set(value) - set(DEFAULTS)):
        out.append(f"{name}.{key} is not a setting (known: {', '.join(DEFAULTS)})")
    for key, (low, high) in RANGES.items():
        if key in value:
            out += integer_errors(value[key], f"{name}.{key}", low, high)
    for key in BOOLEANS:
        if key in value and not isinstance(value[key], bool):
            out.append(f"{name}.{key} must be true or false, got {_shown(value[key])}")
    if "roce_queue" in value and value["roce_queue"] not in ROCE_QUEUES:
        shown = _shown(value["roce_queue"])
        out.append(f"{name}.roce_queue must be one of {', '.join(ROCE_QUEUES)}, got {shown}")
    if out:
        return out
    merged = {**DEFAULTS, **{k: _typed(k, v) for k, v in value.items()}}
    # Classes that share a DSCP or a qos-group are one class on the switch: CNPs would wait behind RoCE.
    for a, b in (("dscp", "cnp_dscp"), ("qos_group", "cnp_qos_group")):
        if merged[a] == merged[b]:
            out.append(
                f"{name}.{a} and {name}.{b} must differ (RoCE data and CNP are two classes), both {merged[a]}"
            )
    if merged["roce_queue"] == "strict" and merged["priority_level"] == 1:
        out.append(
            f"{name}.roce_queue strict puts RoCE on a strict queue below the CNP queue (level 1): "
            "set priority_level 2"
        )
    return out


def settings(value: Any, name: str = "roce_qos") -> dict[str, Any]:
    """DEFAULTS merged with value, numbers as int; raises ValueError naming every bad entry."""
    problems = errors(value, name)
    if problems:
        raise ValueError("; ".join(problems))
    merged = dict(DEFAULTS)
    for key, given in (value or {}).items():
        merged[key] = _typed(key, given)
    return merged


def nccl_ib_tc(value: Any) -> int:
    """NCCL_IB_TC: the IP traffic class byte, whose upper 6 bits are the DSCP."""
    return int(settings(value)["dscp"]) * 4
