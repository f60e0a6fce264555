# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""NVIDIA's Xid catalogue, reduced to what a health gate needs, and the kernel log's Xid lines.

Source: the "Resolution Bucket (Immediate Action)" column of NVIDIA's Xid catalogue for Ampere and newer GPUs,
https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html (the same per-Xid actions NVIDIA ships as
data in its NVSentinel health monitor). An Xid whose immediate action is a GPU reset, a node reboot or one of
NVIDIA's workflows (48: double-bit ECC, 74 and 144-150: NVLink) needs the GPU reset and, if it comes back,
investigation towards an RMA: those fail. RESTART_APP and the like are the job's problem: they warn. IGNORE
is not reported. Codes not in the table (unused, or "report the issue" to NVIDIA) warn.
"""

from __future__ import annotations

import re
from typing import Any

# Immediate actions that make the node unfit for work until the GPU is reset (or the node rebooted).
FAIL_ACTIONS = frozenset(
    {
        "RESET_GPU",
        "RESTART_BM",
        "RESTART_VM",
        "WORKFLOW_XID_48",
        "WORKFLOW_NVLINK_ERR",
        "WORKFLOW_NVLINK5_ERR",
        "CHECK_MECHANICALS",
    }
)


def _codes(*spans: int | tuple[int, int]) -> list[int]:
    out: list[int] = []
    for span in spans:
        if isinstance(span, tuple):
            out.extend(range(span[0], span[1] + 1))
        else:
            out.append(span)
    return out


_BY_ACTION: dict[str, list[int]] = {
    "RESET_GPU": _codes(46, 62, 64, 95, 109, 110, 119, 120, 136, 140, 143, 155, 156, 158, 162),
    "RESTART_BM": _codes(79, 160),
    "RESTART_VM": _codes(151),
    "WORKFLOW_XID_48": _codes(48),
    "WORKFLOW_NVLINK_ERR": _codes(74),
    "WORKFLOW_NVLINK5_ERR": _codes((144, 150)),
    "CHECK_MECHANICALS": _codes(54),
    "UPDATE_SWFW": _codes(78),
    "WORKFLOW_XID_45": _codes(45),
    "CHECK_UVM": _codes(159),
    "RESTART_APP": _codes(
        8,
        11,
        13,
        25,
        31,
        32,
        (39, 41),
        60,
        (68, 72),
        (75, 77),
        80,
        (82, 86),
        88,
        89,
        94,
        (96, 105),
        (126, 135),
        139,
    ),
    "IGNORE": _codes(14, 37, 38, 43, 44, 63, 66, 67, 92, 93, 106, 107, 121, 137, 141, 152, 153, 157, 161),
}

ACTIONS: dict[int, str] = {code: action for action, codes in _BY_ACTION.items() for code in codes}

# Names of the Xids an operator meets most, for the message (the catalogue's descriptions, shortened).
NAMES: dict[int, str] = {
    13: "graphics engine exception",
    31: "GPU memory page fault",
    43: "GPU stopped processing",
    45: "preemptive cleanup",
    46: "GPU timeout",
    48: "double-bit ECC error",
    54: "power reduced clocking (auxiliary power or thermal)",
    62: "internal micro-controller halt",
    63: "row remapping event",
    64: "row remapping failure",
    74: "NVLink error",
    79: "GPU has fallen off the bus",
    92: "high single-bit ECC error rate",
    94: "contained ECC error",
    95: "uncontained ECC error",
    109: "context switch timeout",
    119: "GSP RPC timeout",
    120: "GSP error",
    136: "link training failure",
    140: "unrecoverable ECC error escape",
    143: "GPU initialisation failure",
    154: "GPU recovery action changed",
}

# "NVRM: Xid (PCI:0000:65:00): 79, pid=0, GPU has fallen off the bus." as dmesg or journalctl -k print it
# (older drivers omit "PCI:"); the leading "[ 1234.567890]" is dmesg's / short-monotonic's time since boot.
_XID_RE = re.compile(r"NVRM: Xid \((?:PCI:)?(?P<pci>[0-9A-Fa-f:.]+)\): (?P<xid>\d+),\s*(?P<text>.*?)\s*$")
_MONO_RE = re.compile(r"^\s*\[\s*(?P<ts>\d+\.\d+)\]")


def parse_kernel_log(text: str) -> list[dict[str, Any]]:
    """Every Xid line: {xid, pci, text, ts (seconds since boot or None), line}."""
    events = []
    for raw in text.splitlines():
        match = _XID_RE.search(raw)
        if not match:
            continue
        mono = _MONO_RE.match(raw)
        events.append(
            {
                "xid": int(match.group("xid")),
                "pci": match.group("pci").lower(),
                "text": match.group("text"),
                "ts": float(mono.group("ts")) if mono else None,
                "line": raw.strip(),
            }
        )
    return events


def classify(xid: int) -> tuple[str, str | None]:
    """(immediate action, severity) of XID; severity None means the catalogue says to ignore it."""
    action = ACTIONS.get(xid, "NOT_IN_CATALOGUE")
    if action == "IGNORE":
        return action, None
    return action, "fail" if action in FAIL_ACTIONS else "warn"


def describe(xid: int) -> str:
    action, _severity = classify(xid)
    name = NAMES.get(xid)
    meaning = {
        "RESET_GPU": "NVIDIA: reset the GPU; RMA if it recurs",
        "RESTART_BM": "NVIDIA: reboot the node; RMA if it recurs",
        "RESTART_VM": "NVIDIA: restart the VM",
        "WORKFLOW_XID_48": "NVIDIA: reset the GPU and check row remapping; RMA if it recurs",
        "WORKFLOW_NVLINK_ERR": "NVIDIA: NVLink workflow (reset, then check the link); RMA if it recurs",
        "WORKFLOW_NVLINK5_ERR": "NVIDIA: NVLink5 workflow (reset, then check the link); RMA if it recurs",
        "CHECK_MECHANICALS": "NVIDIA: check power and cooling",
        "NOT_IN_CATALOGUE": "not in NVIDIA's catalogue's reset/reboot buckets",
    }.get(action, f"NVIDIA: {action}")
    return f"Xid {xid}" + (f" ({name})" if name else "") + f": {meaning}"
