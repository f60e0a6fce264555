# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rdma role's check phase: its variables in, ``{errors, plan}`` out (action plugin rdma_check).

Checks the package and kernel module lists, the memlock limit, the opensm settings and, when the NIC QoS
step runs, ``roce_qos`` (the one check of module_utils/qos/roce.py); the plan carries the RoCE numbers that
step gives rdmaops.cluster.nic_qos, so nothing re-derives them later.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.node.values import whole
from ansible_collections.rdmaops.cluster.plugins.module_utils.phase_module import required_raw
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import roce

_PACKAGE = re.compile(r"[a-z0-9][a-z0-9.+-]*")
_MODULE = re.compile(r"[A-Za-z0-9_-]+")
_GUID = re.compile(r"0x[0-9a-fA-F]{16}")

RDMA_CHECK_SPEC: dict[str, Any] = {
    **required_raw("packages", "kernel_modules", "memlock_limit", "opensm", "opensm_priority"),
    "opensm_guids": {"type": "raw", "default": []},
    "nic_qos_enabled": {"type": "bool", "default": True},
    "roce_qos": {"type": "raw"},
}


def _is_list(value: Any) -> bool:
    return isinstance(value, (list, tuple))


def _bad(values: list[Any], pattern: re.Pattern[str]) -> list[Any]:
    return [v for v in values if not (isinstance(v, str) and pattern.fullmatch(v))]


def rdma_check(p: Mapping[str, Any]) -> dict[str, Any]:
    errors: list[str] = []
    packages, modules = p["packages"], p["kernel_modules"]
    if not _is_list(packages) or _bad(list(packages), _PACKAGE):
        errors.append(f"rdma_packages must be a list of package names, got {packages}")
    if not _is_list(modules) or _bad(list(modules), _MODULE):
        shown = _bad(list(modules), _MODULE) if _is_list(modules) else modules
        errors.append(
            f"rdma_kernel_modules must be a list of module names (letters, digits, _ and -), got {shown}"
        )
    limit = str(p["memlock_limit"])
    if limit != "unlimited" and whole(limit) is None:
        errors.append(f"rdma_memlock_limit must be 'unlimited' or a number of KiB, got '{limit}'")
    if str(p["opensm"]).lower() not in ("auto", "true", "false"):
        errors.append(f"rdma_opensm must be auto, true or false, got '{p['opensm']}'")
    priority = str(p["opensm_priority"])
    if whole(priority) not in range(16):
        errors.append(f"rdma_opensm_priority must be an integer in 0..15, got '{priority}'")
    guids = p["opensm_guids"]
    bad_guids = _bad(list(guids), _GUID) if _is_list(guids) else [guids]
    if bad_guids:
        errors.append(
            f"rdma_opensm_guids must be port GUIDs like 0x0002c9030002fce9 (see ibstat -p), bad: {bad_guids}"
        )
    if p["nic_qos_enabled"]:
        errors += roce.errors(p["roce_qos"])
    if errors:
        return {"errors": errors, "plan": {}}
    return {
        "errors": [],
        "plan": {"roce_qos": roce.settings(p["roce_qos"]) if p["nic_qos_enabled"] else None},
    }
