# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roce_qos_settings: the fabric's RoCE QoS numbers over their defaults (documented in roce_qos_settings.yml).

The roles check roce_qos in their validate phase (rdmaops.cluster.switch_qos_check, nccl_env_check,
rdma_check), all through module_utils/qos/roce.py.
"""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import roce as rq


def roce_qos_settings(value: Any) -> dict[str, Any]:
    try:
        return rq.settings(value)
    except ValueError as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"roce_qos_settings": roce_qos_settings}
