# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The mesh_network role's check phase: a node's part of the cluster's plan and what the node reported in,
``{errors, plan}`` out, per host.

One pure function (``check``) behind the action plugin rdmaops.cluster.mesh_network_check, per host, after
the cluster phase (cluster.py, once per run) planned every node: the rules that need this node's own facts
(its ports name interfaces it has, each carries the MTU, none is its management path), then this node's
plan as the role's later tasks use it: its ports resolved (by name or MAC), addresses, routes, sysctls, the
netplan document, the paths to probe after the apply and in verify. Its work grows with the node's own
ports and peers, not with the cabling's paths.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import addressing as ma
from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import (
    cabling,
    data_ports,
    fabric,
    fabric_plan,
    host_plan,
    reachability,
)
from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import safety as ms
from ansible_collections.rdmaops.cluster.plugins.module_utils.phase_module import required_raw

MESH_NETWORK_CHECK_SPEC: dict[str, Any] = {
    "host": {"type": "str", "required": True},
    **required_raw("mgmt_cidr", "mtu"),
    "topology": {"type": "str", "required": True, "choices": ["mesh", "switched"]},
    "ports": {"type": "raw", "default": {}},
    "fabric_ports": {"type": "raw", "default": []},
    "fabric_port": {"type": "raw", "default": ""},
    "nodeaddr_ifname": {"type": "str", "required": True},
    "node": {"type": "dict", "required": True},
    "part": {"type": "dict", "required": True},
    "shared": {"type": "dict", "required": True},
    "apply_targets": {"type": "list", "elements": "str", "default": []},
}


def _port_names(specs: list[Any], interfaces: Mapping[str, str]) -> list[str]:
    """The interfaces the MTU is set on: the ports that resolve on this node (the others are reported)."""
    out = []
    for spec in specs:
        port, _err = data_ports.resolve_port(spec, interfaces, "port")
        if port is not None:
            out.append(port["name"])
    return out


def check(params: Mapping[str, Any]) -> dict[str, Any]:
    """{errors: [...], plan: {...}}: every message naming its bad value, or this node's plan."""
    host = str(params["host"])
    topology = str(params["topology"])
    me = dict(params["node"] or {})
    part, shared = dict(params["part"] or {}), dict(params["shared"] or {})
    names = [str(h) for h in shared.get("hosts") or []]
    try:
        interfaces = data_ports.ip_link_interfaces(me.get("addr") or "[]")
    except ma.MeshAddressingError as exc:
        return {"errors": [f"{host}: {exc}"], "plan": {}}
    if host not in names or not part:
        return {"errors": [f"{host} is not in mesh_network_hosts {names!s}"], "plan": {}}
    ports = params["ports"] if params["ports"] is not None else {}
    many = params["fabric_ports"]
    specs = fabric.node_ports(many, params["fabric_port"])
    single = not (isinstance(many, list) and many)
    if topology == "mesh":
        errors = data_ports.port_errors(host, names, topology, ports, None, interfaces)
        data = (
            [s for value in ports.values() for s in cabling.port_specs(value)]
            if isinstance(ports, Mapping)
            else []
        )
        fabric_ports: Any = None
    else:
        errors = data_ports.fabric_port_errors(host, specs, interfaces, single=single)
        data, fabric_ports = specs, (params["fabric_port"] if single else list(specs))
    errors += data_ports.port_mtu_errors(
        host, params["mtu"], me.get("addr") or "[]", _port_names(data, interfaces)
    )
    connect = [str(a) for a in me.get("connect") or []]
    try:
        errors += ms.management_errors(
            host,
            topology,
            ports,
            fabric_ports,
            interfaces,
            me.get("addr") or "[]",
            me.get("route") or "[]",
            connect,
            params["mgmt_cidr"],
        )
        identity = ms.management_identity(me.get("addr") or "[]", connect)
    except ma.MeshAddressingError as exc:
        errors.append(f"{host}: {exc}")
        identity = {}
    if errors:
        return {"errors": errors, "plan": {}}
    try:
        if topology == "mesh":
            plan = host_plan.mesh_node_plan(
                host, names, part, shared["peers"], interfaces, params["nodeaddr_ifname"]
            )
        else:
            resolved = [host_plan.resolved_port(spec, interfaces) for spec in specs]
            rails = shared["fabric"]["rails"]
            plan = fabric_plan.node_plan(
                host, names, rails, resolved, shared["fabric"].get("leaf_routes") or []
            )
        mtu = params["mtu"]
        renumbering = bool(shared.get("renumbering"))
        extra = list(dict.fromkeys(a for a in params["apply_targets"] if a))
        checks = reachability.path_checks(plan, mtu)
        plan.update(
            netplan=host_plan.netplan_document(plan, mtu),
            expected_addresses=host_plan.expected_addresses(plan),
            path_checks=checks,
            # While renumbering, every node moves at once and an address that answered before may belong to
            # another cable afterwards: only the controller and the extra hosts must keep answering then
            # (verify checks the mesh after). Otherwise the direct paths too, at the MTU.
            apply_targets=extra if renumbering else reachability.check_targets(extra, plan, mtu, checks),
            renumbering=renumbering,
            layout=dict(shared.get("layout") or {"kept": 0, "changes": []}),
            mgmt_identity=identity,
            fabric_rails=fabric_plan.export(plan),
        )
    except ma.MeshAddressingError as exc:
        return {"errors": [str(exc)], "plan": {}}
    return {"errors": [], "plan": plan}
