# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one definition of the fabric's RoCE QoS numbers, and their one check.

Switches (switch_qos), host NICs (dcb) and NCCL (NCCL_IB_TC) all read ``roce_qos`` through
``settings()``: when they disagree, RoCE drops packets, so there is exactly one place with the
defaults and one validation. Pure Python.
"""

from __future__ import annotations

import re
from typing import Any

# The reference fabric: RoCE marked DSCP 26 (AF31), classified into qos-group 3, lossless (PFC) on
# CoS 3, strict priority level 1 on egress, jumbo frames, ECN marking on the RoCE queue.
DEFAULTS: dict[str, Any] = {
    "dscp": 26,
    "cos": 3,
    "qos_group": 3,
    "priority_level": 1,
    "mtu": 9216,
    "ecn": True,
}

# Ranges every supported platform accepts: qos-group 0..7 (NX-OS has 8 queues; IOS-XE takes 0..99),
# priority level 1..2 (IOS-XE's model allows no more), MTU 1500..9216 (NX-OS interfaces stop at 9216).
RANGES: dict[str, tuple[int, int]] = {
    "dscp": (0, 63),
    "cos": (0, 7),
    "qos_group": (0, 7),
    "priority_level": (1, 2),
    "mtu": (1500, 9216),
}


def _shown(value: Any) -> str:
    # str(): a plain str, so an Ansible-tagged string reads like any other in the message.
    return repr(str(value)) if isinstance(value, str) else repr(value)


def _whole(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"[0-9]+", value):
        return int(value)
    return None


def integer_errors(value: Any, name: str, low: int, high: int) -> list[str]:
    """The one range rule: a whole number (an int, or a string of digits) in low..high."""
    number = _whole(value)
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
    if "ecn" in value and not isinstance(value["ecn"], bool):
        out.append(f"{name}.ecn must be true or false, got {_shown(value['ecn'])}")
    return out


def settings(value: Any, name: str = "roce_qos") -> dict[str, Any]:
    """DEFAULTS merged with value, numbers as int; raises ValueError naming every bad entry."""
    problems = errors(value, name)
    if problems:
        raise ValueError("; ".join(problems))
    merged = dict(DEFAULTS)
    for key, given in (value or {}).items():
        merged[key] = given if key == "ecn" else _whole(given)
    return merged


def nccl_ib_tc(value: Any) -> int:
    """NCCL_IB_TC: the IP traffic class byte, whose upper 6 bits are the DSCP."""
    return int(settings(value)["dscp"]) * 4
