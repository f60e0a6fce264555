# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The switch_qos role's validate phase: its inputs in, ``{errors, plan}`` out (action switch_qos_check).

Everything that can be known without the switch: the shared roce_qos numbers (module_utils/qos/roce.py, also
checked by nccl_env and rdma), the platform's port names, duplicates, object names, thresholds, the confirm
timing and the credentials. The plan is what the role's configure step hands the switch_qos module.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import roce
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import switch as sq

SWITCH_QOS_CHECK_SPEC: dict[str, Any] = {
    "roce_qos": {"type": "raw"},
    "platform": {"type": "raw", "required": True},
    "interfaces": {"type": "raw", "required": True},
    "names": {"type": "raw"},
    "ecn": {"type": "raw"},
    "password": {"type": "str", "default": "", "no_log": True},
    "ssh_key": {"type": "str", "default": ""},
    "confirm_timeout": {"type": "raw", "required": True},
}


def switch_qos_check(p: Mapping[str, Any]) -> dict[str, Any]:
    errors = roce.errors(p["roce_qos"])
    problems, names, ecn = sq.check_inputs(p["platform"], p["interfaces"], p["names"], p["ecn"])
    errors += problems
    if not p["password"] and not p["ssh_key"]:
        errors.append("no credentials: set switch_qos_password (from Ansible Vault) or switch_qos_ssh_key")
    timeout = p["confirm_timeout"]
    if not (isinstance(timeout, int) or str(timeout).isdigit()) or int(timeout) < 1:
        errors.append("switch_qos_confirm_timeout must be at least 1 second")
    if errors:
        return {"errors": errors, "plan": {}}
    qos = roce.settings(p["roce_qos"])
    return {
        "errors": [],
        "plan": {
            "roce_qos": qos,
            "interfaces": [str(i) for i in p["interfaces"]],
            "names": vars(names),
            "ecn": vars(ecn),
            "manual": sq.manual_steps(str(p["platform"]), qos, [str(i) for i in p["interfaces"]]),
        },
    }
