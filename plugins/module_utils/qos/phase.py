# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The switch_qos role's check phase: its inputs in, ``{errors, plan}`` out (action plugin switch_qos_check).

Everything that can be known without the switch: the shared roce_qos numbers (module_utils/qos/roce.py, also
checked by nccl_env and rdma), the platform's port names, duplicates, object names, thresholds, the confirm
timing and the credentials. The plan is what the role's configure step hands the switch_qos module.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.phase_module import required_raw
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import roce
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos.netconf import timing_errors
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos.switch_inputs import (
    PLATFORMS,
    Ecn,
    Names,
    check_inputs,
)
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos.switch_lines import manual_steps

_KINDS = {bool: "bool", int: "int", str: "str"}
# The switch_qos module's arguments (plugins/modules/switch_qos.py documents them). roce_qos is typed (its
# defaults are roce.DEFAULTS); names and ecn stay raw so that the module checks exactly what the role checks.
SWITCH_QOS_SPEC: dict[str, Any] = {
    "name": {"type": "str", "required": True},
    "host": {"type": "str", "required": True},
    "port": {"type": "int", "default": 830},
    "username": {"type": "str", "required": True},
    "password": {"type": "str", "no_log": True},
    "ssh_key": {"type": "path", "no_log": False},
    "hostkey_verify": {"type": "bool", "default": True},
    "timeout": {"type": "int", "default": 30},
    "platform": {"type": "str", "required": True, "choices": list(PLATFORMS)},
    "interfaces": {"type": "list", "elements": "raw", "required": True},
    "roce_qos": {
        "type": "dict",
        "default": {},
        "options": {k: {"type": _KINDS[type(v)], "default": v} for k, v in roce.DEFAULTS.items()},
    },
    "names": {
        "type": "dict",
        "default": {},
        "options": {k: {"type": "raw", "default": v} for k, v in vars(Names()).items()},
    },
    "ecn": {
        "type": "dict",
        "default": {},
        "options": {k: {"type": "raw", "default": v} for k, v in vars(Ecn()).items()},
    },
    "confirm_timeout": {"type": "int", "default": 120},
    "hold_before_confirm": {"type": "int", "default": 0},
    "validate": {"type": "str", "choices": ["candidate", "inline", "none"], "default": "candidate"},
    "with_defaults": {
        "type": "str",
        "choices": ["auto", "explicit", "trim", "report-all"],
        "default": "auto",
    },
    "backup_dir": {"type": "path", "required": True},
}

SWITCH_QOS_CHECK_SPEC: dict[str, Any] = {
    "roce_qos": {"type": "raw"},
    **required_raw("platform", "interfaces", "confirm_timeout"),
    "names": {"type": "raw"},
    "ecn": {"type": "raw"},
    "password": {"type": "str", "default": "", "no_log": True},
    "ssh_key": {"type": "str", "default": "", "no_log": False},
    "hold_before_confirm": {"type": "raw", "default": 0},
    "timeout": {"type": "raw", "default": 30},
}


def switch_qos_check(p: Mapping[str, Any]) -> dict[str, Any]:
    errors = roce.errors(p["roce_qos"])
    qos = roce.settings(p["roce_qos"]) if not errors else None
    problems, names, ecn = check_inputs(p["platform"], p["interfaces"], p["names"], p["ecn"], qos)
    errors += problems
    if not p["password"] and not p["ssh_key"]:
        errors.append("no credentials: set switch_qos_password (from Ansible Vault) or switch_qos_ssh_key")
    errors += timing_errors(p["confirm_timeout"], p["hold_before_confirm"], p["timeout"])
    if errors or qos is None:
        return {"errors": errors, "plan": {}}
    interfaces = list(p["interfaces"])
    return {
        "errors": [],
        "plan": {
            "roce_qos": qos,
            "interfaces": interfaces,
            "names": vars(names),
            "ecn": vars(ecn),
            "manual": manual_steps(p["platform"], qos, interfaces),
        },
    }
