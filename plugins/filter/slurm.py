# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the slurm role (docs: the .yml files beside this one); logic: module_utils/slurm/config.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.rdmaops.cluster.plugins.module_utils.slurm import config as slurm


def slurm_inventory_errors(
    controllers: list[str],
    nodes: list[str],
    inventory_hosts: list[str],
    play_hosts: list[str],
    controller_group: str,
    partitions: Any,
    groups: dict[str, list[str]],
) -> list[str]:
    errors = slurm.controller_errors(list(controllers), list(play_hosts), controller_group)
    if not nodes:
        errors.append("no Slurm nodes: the compute group is empty or missing")
    errors += slurm.node_errors(list(nodes), list(inventory_hosts), list(play_hosts))
    errors += slurm.partition_errors(partitions, dict(groups), list(nodes))
    return errors


def slurm_hardware_errors(info: dict[str, dict[str, Any]]) -> list[str]:
    return slurm.hardware_errors(dict(info))


def slurm_node_definitions(info: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    try:
        return slurm.node_definitions(dict(info))
    except slurm.SlurmError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def slurm_node_line(node: dict[str, Any]) -> str:
    return slurm.node_line(dict(node))


def slurm_partition_lines(
    partitions: list[dict[str, Any]], groups: dict[str, list[str]], nodes: list[dict[str, Any]]
) -> list[str]:
    return slurm.partition_lines(list(partitions), dict(groups), list(nodes))


def slurm_conf_change(new: str, old: str | None) -> dict[str, Any]:
    return slurm.conf_change(old, new)


def slurm_conf_outliers(texts: dict[str, str]) -> list[str]:
    """Hosts whose rendered slurm.conf differs from the first host's."""
    items = list(texts.items())
    return [host for host, text in items[1:] if text != items[0][1]]


def slurm_sinfo_states(text: str) -> dict[str, str]:
    return slurm.parse_sinfo_nodes(text)


class FilterModule:
    def filters(self) -> dict[str, Callable[..., Any]]:
        return {
            "slurm_inventory_errors": slurm_inventory_errors,
            "slurm_hardware_errors": slurm_hardware_errors,
            "slurm_node_definitions": slurm_node_definitions,
            "slurm_node_line": slurm_node_line,
            "slurm_partition_lines": slurm_partition_lines,
            "slurm_conf_change": slurm_conf_change,
            "slurm_sinfo_states": slurm_sinfo_states,
            "slurm_conf_outliers": slurm_conf_outliers,
        }
