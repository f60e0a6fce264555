# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters for an operator's own playbooks over a direct-connect data network (docs: the .yml files here).

mesh_links (the cables and their subnets), mesh_node_addresses, mesh_node_order (nodes along the cabling, for
rank order), mesh_netplan (a plan as netplan), mesh_reachability_table (verify results as a table). The
mesh_network role itself plans through rdmaops.cluster.mesh_network_check; these share its functions
(module_utils/mesh/). Pools, prefix and MTU are required arguments: their defaults belong to the role.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import wraps
from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import addressing as ma
from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import cabling, host_plan, reachability


def _filter_errors(func: Callable[..., Any]) -> Callable[..., Any]:
    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except ma.MeshAddressingError as exc:
            raise AnsibleFilterError(f"{func.__name__}: {exc}") from exc

    return wrapper


@_filter_errors
def mesh_links(
    hosts: Any, pool: Any, prefix: Any, ports: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    return ma.mesh_links(hosts, pool, prefix, dict(ports) if ports is not None else None)


@_filter_errors
def mesh_node_addresses(hosts: Any, pool: Any) -> dict[str, str]:
    return ma.node_addresses(hosts, pool)


@_filter_errors
def mesh_node_order(hosts: Any, ports: Mapping[str, Any] | None = None) -> list[str]:
    return cabling.node_order(ma.check_hosts(hosts), dict(ports) if ports is not None else None)


@_filter_errors
def mesh_reachability_table(results: Mapping[str, Any], hosts: Any) -> str:
    return reachability.reachability_table(results, ma.check_hosts(hosts))


@_filter_errors
def mesh_netplan(plan: Mapping[str, Any], mtu: Any) -> dict[str, Any]:
    return host_plan.netplan_document(plan, mtu)


class FilterModule:
    """rdmaops.cluster data-network filters."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {
            "mesh_links": mesh_links,
            "mesh_node_addresses": mesh_node_addresses,
            "mesh_node_order": mesh_node_order,
            "mesh_reachability_table": mesh_reachability_table,
            "mesh_netplan": mesh_netplan,
        }
