# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that keep the data-network role safe (docs: the .yml files beside this one).

The rules live in module_utils/mesh/safety.py (management ports, duplicate nodes, anchored addresses)
and module_utils/mesh/lldp.py (cabling from LLDP); these wrappers only turn their errors into filter errors.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import wraps
from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import addressing as ma
from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import lldp
from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import safety as ms


def _filter_errors(func: Callable[..., Any]) -> Callable[..., Any]:
    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except (ma.MeshAddressingError, lldp.LldpError) as exc:
            raise AnsibleFilterError(f"{func.__name__}: {exc}") from exc

    return wrapper


@_filter_errors
def mesh_management_errors(
    host: str,
    topology: str,
    ports: Any,
    fabric_port: Any,
    interfaces: Mapping[str, str],
    addr_json: Any,
    route_json: Any,
    connect_addresses: Any,
    mgmt_cidr: Any,
) -> list[str]:
    return ms.management_errors(
        host,
        topology,
        ports,
        fabric_port,
        dict(interfaces),
        addr_json,
        route_json,
        [str(a) for a in connect_addresses or []],
        mgmt_cidr,
    )


@_filter_errors
def mesh_management_identity(addr_json: Any, connect_addresses: Any) -> dict[str, str]:
    return ms.management_identity(addr_json, [str(a) for a in connect_addresses or []])


@_filter_errors
def mesh_identity_errors(identities: Mapping[str, Any]) -> list[str]:
    return ms.identity_errors(dict(identities))


@_filter_errors
def mesh_read_netplan(doc: Any, nodeaddr_ifname: str, text: Any = "") -> dict[str, Any]:
    return ms.read_netplan(doc, nodeaddr_ifname, str(text or ""))


@_filter_errors
def mesh_anchored_layout(
    hosts: Any,
    existing: Mapping[str, Any],
    link_pool: Any,
    link_prefix: Any,
    node_pool: Any,
    renumber: bool = False,
    ports: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    return ms.anchored_layout(
        hosts, dict(existing), link_pool, link_prefix, node_pool, renumber=bool(renumber), ports=ports
    )


@_filter_errors
def mesh_lldp_neighbors(text: Any) -> dict[str, dict[str, str]]:
    return lldp.parse_neighbors(text)


@_filter_errors
def mesh_cabling_report(
    host: str, ports: Mapping[str, Any], neighbors: Mapping[str, Any], names: Mapping[str, Any]
) -> dict[str, list[str]]:
    return lldp.cabling_report(
        host, dict(ports), dict(neighbors), {h: list(v or []) for h, v in names.items()}
    )


@_filter_errors
def mesh_discovered_ports(
    neighbors: Mapping[str, Any], names: Mapping[str, Any], host: str, exclude: Any = ()
) -> dict[str, Any]:
    return lldp.discovered_ports(
        dict(neighbors), {h: list(v or []) for h, v in names.items()}, host, [str(x) for x in exclude or []]
    )


class FilterModule:
    """rdmaops.cluster data-network safety filters."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {
            "mesh_management_errors": mesh_management_errors,
            "mesh_management_identity": mesh_management_identity,
            "mesh_identity_errors": mesh_identity_errors,
            "mesh_read_netplan": mesh_read_netplan,
            "mesh_anchored_layout": mesh_anchored_layout,
            "mesh_lldp_neighbors": mesh_lldp_neighbors,
            "mesh_cabling_report": mesh_cabling_report,
            "mesh_discovered_ports": mesh_discovered_ports,
        }
