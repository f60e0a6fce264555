# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters over roce_qos, the fabric's RoCE QoS numbers (documented in the .yml file of each filter)."""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import roce as rq
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import switch as sq


def roce_qos_errors(value: Any, name: str = "roce_qos") -> list[str]:
    return rq.errors(value, name)


def roce_qos_settings(value: Any) -> dict[str, Any]:
    try:
        return rq.settings(value)
    except ValueError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def switch_qos_input_errors(
    interfaces: Any, platform: str, names: dict[str, Any] | None = None, ecn: dict[str, Any] | None = None
) -> list[str]:
    if not isinstance(interfaces, list):
        return [f"switch_qos_interfaces must be a list of port names, got {interfaces!r}"]
    try:
        n = sq.Names(**(names or {}))
        e = sq.Ecn(**(ecn or {}))
    except TypeError as exc:
        return [f"switch_qos_names / switch_qos_ecn has an unknown key: {exc}"]
    return sq.input_errors(platform, [str(i) for i in interfaces], n, e)


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "roce_qos_errors": roce_qos_errors,
            "roce_qos_settings": roce_qos_settings,
            "switch_qos_input_errors": switch_qos_input_errors,
        }
