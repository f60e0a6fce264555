# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters for mesh / switched data-network addressing (docs: the .yml files beside this one).

Pools, prefix, MTU and names are required arguments: their defaults belong to the mesh_network role.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import wraps
from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import addressing as ma


def _filter_errors(func: Callable[..., Any]) -> Callable[..., Any]:
    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except ma.MeshAddressingError as exc:
            raise AnsibleFilterError(f"{func.__name__}: {exc}") from exc

    return wrapper


@_filter_errors
def mesh_links(hosts: Any, pool: Any, prefix: Any) -> list[dict[str, str]]:
    return ma.mesh_links(hosts, pool, prefix)


@_filter_errors
def mesh_switched_addresses(hosts: Any, subnet: Any) -> dict[str, dict[str, Any]]:
    return ma.switched_addresses(hosts, subnet)


@_filter_errors
def mesh_node_addresses(hosts: Any, pool: Any) -> dict[str, str]:
    return ma.node_addresses(hosts, pool)


@_filter_errors
def mesh_pool_errors(pools: Mapping[str, Any], mgmt_cidr: Any) -> list[str]:
    if not isinstance(pools, Mapping):
        raise ma.MeshAddressingError(f"pools {pools!r} is not a mapping of name to CIDR")
    return ma.pool_errors(pools, mgmt_cidr)


@_filter_errors
def mesh_plan_errors(
    hosts: Any,
    topology: str,
    link_pool: Any,
    link_prefix: Any,
    node_pool: Any,
    fabric_subnet: Any,
) -> list[str]:
    return ma.plan_errors(hosts, topology, link_pool, link_prefix, node_pool, fabric_subnet)


@_filter_errors
def mesh_path_checks(plan: Mapping[str, Any], mtu: Any) -> list[dict[str, Any]]:
    return ma.path_checks(plan, mtu)


@_filter_errors
def mesh_check_targets(extra: Any, plan: Mapping[str, Any], mtu: Any) -> list[dict[str, Any]]:
    return ma.check_targets(list(extra or []), plan, mtu)


@_filter_errors
def mesh_mtu_errors(mtu: Any, name: str) -> list[str]:
    return ma.mtu_errors(mtu, name)


@_filter_errors
def mesh_expected_addresses(plan: Mapping[str, Any]) -> list[dict[str, str]]:
    return ma.expected_addresses(plan)


@_filter_errors
def mesh_verify_results(checks: Any, routes: Any, pings: Any) -> list[dict[str, Any]]:
    return ma.verify_results(checks, routes, pings)


@_filter_errors
def mesh_reachability_table(results: Mapping[str, Any], hosts: Any) -> str:
    return ma.reachability_table(results, ma.check_hosts(hosts))


@_filter_errors
def mesh_port_errors(
    host: str, hosts: Any, topology: str, ports: Any, fabric_port: Any, interfaces: Mapping[str, str]
) -> list[str]:
    try:
        names = ma.check_hosts(hosts)
    except ma.MeshAddressingError as exc:
        # Reported as a message, like the port problems: validate.yml collects every message in one list.
        return [str(exc)]
    return ma.port_errors(host, names, topology, ports, fabric_port, dict(interfaces))


@_filter_errors
def mesh_ip_link_interfaces(text: Any) -> dict[str, str]:
    return ma.ip_link_interfaces(text)


@_filter_errors
def mesh_host_plan(
    host: str,
    hosts: Any,
    topology: str,
    interfaces: Mapping[str, str],
    ports: Any = None,
    fabric_port: Any = None,
    *,
    link_pool: str,
    link_prefix: Any,
    node_pool: str,
    fabric_subnet: str,
    nodeaddr_ifname: str,
    layout: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    return ma.host_plan(
        host,
        hosts,
        topology,
        ports=ports,
        fabric_port=fabric_port,
        interfaces=dict(interfaces),
        link_pool=link_pool,
        link_prefix=link_prefix,
        node_pool=node_pool,
        fabric_subnet=fabric_subnet,
        nodeaddr_ifname=nodeaddr_ifname,
        layout=layout or None,
    )


@_filter_errors
def mesh_netplan(plan: Mapping[str, Any], mtu: Any) -> dict[str, Any]:
    return ma.netplan_document(plan, mtu)


class FilterModule:
    """rdmaops.cluster mesh addressing filters."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {
            "mesh_links": mesh_links,
            "mesh_switched_addresses": mesh_switched_addresses,
            "mesh_node_addresses": mesh_node_addresses,
            "mesh_pool_errors": mesh_pool_errors,
            "mesh_ip_link_interfaces": mesh_ip_link_interfaces,
            "mesh_plan_errors": mesh_plan_errors,
            "mesh_path_checks": mesh_path_checks,
            "mesh_check_targets": mesh_check_targets,
            "mesh_verify_results": mesh_verify_results,
            "mesh_expected_addresses": mesh_expected_addresses,
            "mesh_port_errors": mesh_port_errors,
            "mesh_reachability_table": mesh_reachability_table,
            "mesh_host_plan": mesh_host_plan,
            "mesh_netplan": mesh_netplan,
            "mesh_mtu_errors": mesh_mtu_errors,
        }
