# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The mesh_network role's check phase: the inventory and what the nodes report in, ``{errors, plan}`` out.

One pure function (``check``) behind the action plugin rdmaops.cluster.mesh_network_check: it runs every rule
of the data network on one node's view (host list, MTU, pools, cabling, this node's ports, the management
path, one node under two names, addresses in use), and when none fails returns everything the role's later
tasks use: the node's addresses, cables and routes, the netplan document, the paths to probe after the apply
and in verify, and a summary of the cabling (shape, order, hops) for other roles (NCCL, train).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import addressing as ma
from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import (
    cabling,
    data_ports,
    host_plan,
    reachability,
)
from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import safety as ms
from ansible_collections.rdmaops.cluster.plugins.module_utils.phase_module import required_raw

MESH_NETWORK_CHECK_SPEC: dict[str, Any] = {
    "host": {"type": "str", "required": True},
    **required_raw("hosts", "mgmt_cidr", "link_pool", "link_prefix", "node_pool", "fabric_subnet", "mtu"),
    "topology": {"type": "str", "required": True, "choices": ["mesh", "switched"]},
    "ports": {"type": "raw", "default": {}},
    "all_ports": {"type": "dict", "default": {}},
    "fabric_port": {"type": "raw", "default": ""},
    "nodeaddr_ifname": {"type": "str", "required": True},
    "renumber": {"type": "bool", "default": False},
    "nodes": {"type": "dict", "required": True},
    "apply_targets": {"type": "list", "elements": "str", "default": []},
}


def _node(nodes: Mapping[str, Any], host: str) -> Mapping[str, Any]:
    value = nodes.get(host)
    return value if isinstance(value, Mapping) else {}


def _data_ports(topology: str, ports: Any, params: Mapping[str, Any]) -> list[str]:
    """The interfaces the MTU is set on: every cable's port (one or a list per peer), or the fabric port."""
    if topology != "mesh":
        return [str(params["fabric_port"])] if params["fabric_port"] else []
    if not isinstance(ports, Mapping):
        return []
    out: list[str] = []
    for value in ports.values():
        out += [str(v) for v in value] if isinstance(value, list) else [str(value)]
    return out


def check(params: Mapping[str, Any]) -> dict[str, Any]:
    """{errors: [...], plan: {...}}: every message naming its bad value, or this node's plan."""
    host = str(params["host"])
    hosts = params["hosts"]
    topology = str(params["topology"])
    nodes = dict(params["nodes"] or {})
    me = _node(nodes, host)
    errors: list[str] = []
    try:
        interfaces = data_ports.ip_link_interfaces(me.get("addr") or "[]")
    except ma.MeshAddressingError as exc:
        return {"errors": [f"{host}: {exc}"], "plan": {}}
    try:
        names = ma.check_hosts(hosts)
    except ma.MeshAddressingError as exc:
        names = []
        errors.append(str(exc))
    if names and host not in names:
        errors.append(f"{host} is not in mesh_network_hosts {names!s}")
    # The MTU as text, so the message quotes it as the inventory wrote it.
    errors += data_ports.mtu_errors(str(params["mtu"]), "mesh_network_mtu")
    pools = (
        {"mesh_network_link_pool": params["link_pool"], "mesh_network_node_pool": params["node_pool"]}
        if topology == "mesh"
        else {"mesh_network_fabric_subnet": params["fabric_subnet"]}
    )
    # A pool that does not parse is named once, by its variable: the plan is checked only on good pools.
    pool_errors = ma.pool_errors(pools, params["mgmt_cidr"])
    errors += pool_errors
    ports = params["ports"] if params["ports"] is not None else {}
    # Every node's port map: the inventory's, replaced by what each node of the play had in effect (role
    # vars included), and this node's own.
    all_ports = dict(params["all_ports"] or {})
    all_ports.update({h: _node(nodes, h)["ports"] for h in nodes if "ports" in _node(nodes, h)})
    all_ports[host] = ports
    plan_errors = (
        []
        if pool_errors
        else ma.plan_errors(
            hosts,
            topology,
            params["link_pool"],
            params["link_prefix"],
            params["node_pool"],
            params["fabric_subnet"],
            ports=all_ports if topology == "mesh" else None,
        )
    )
    errors += plan_errors
    if names:
        errors += data_ports.port_errors(host, names, topology, ports, params["fabric_port"], interfaces)
        errors += data_ports.port_mtu_errors(
            host, params["mtu"], me.get("addr") or "[]", _data_ports(topology, ports, params)
        )
    connect = [str(a) for a in me.get("connect") or []]
    try:
        errors += ms.management_errors(
            host,
            topology,
            ports,
            params["fabric_port"],
            interfaces,
            me.get("addr") or "[]",
            me.get("route") or "[]",
            connect,
            params["mgmt_cidr"],
        )
        # Every play host's management address and MAC: two inventory names for one node are refused, named
        # in the inventory's order on every run.
        order = [h for h in names if h in nodes] + sorted(h for h in nodes if h not in names)
        identities = {
            h: ms.management_identity(
                _node(nodes, h).get("addr") or "[]", list(_node(nodes, h).get("connect") or [])
            )
            for h in order
        }
        errors += ms.identity_errors(identities)
    except ma.MeshAddressingError as exc:
        errors.append(f"{host}: {exc}")
        identities = {}
    cable_list: list[dict[str, Any]] = []
    graph = None
    if topology == "mesh" and names:
        cable_list, cable_errors = cabling.cables(names, all_ports)
        errors += cable_errors
        graph = cabling.Graph(names, cable_list)
        errors += cabling.connectivity_errors(graph)
    layout: dict[str, Any] = {}
    if topology == "mesh" and names and not pool_errors and not plan_errors:
        try:
            existing = {
                h: ms.read_netplan(
                    _node(nodes, h).get("netplan"),
                    params["nodeaddr_ifname"],
                    str(_node(nodes, h).get("netplan_text") or ""),
                )
                for h in names
                if h in nodes
            }
            layout = ms.anchored_layout(
                names,
                existing,
                params["link_pool"],
                params["link_prefix"],
                params["node_pool"],
                renumber=bool(params["renumber"]),
                ports={h: all_ports.get(h) for h in existing},
                cables=cable_list,
            )
        except ma.MeshAddressingError as exc:
            errors.append(str(exc))
        errors += list(layout.get("errors") or [])
    if errors:
        return {"errors": errors, "plan": {}}
    try:
        plan = host_plan.host_plan(
            host,
            names,
            topology,
            ports=ports,
            all_ports=all_ports,
            fabric_port=params["fabric_port"],
            interfaces=interfaces,
            link_pool=params["link_pool"],
            link_prefix=params["link_prefix"],
            node_pool=params["node_pool"],
            fabric_subnet=params["fabric_subnet"],
            nodeaddr_ifname=params["nodeaddr_ifname"],
            layout=layout or None,
        )
        mtu = params["mtu"]
        renumbering = bool(params["renumber"]) and bool(layout.get("changes"))
        extra = list(dict.fromkeys(a for a in params["apply_targets"] if a))
        plan.update(
            netplan=host_plan.netplan_document(plan, mtu),
            expected_addresses=host_plan.expected_addresses(plan),
            path_checks=reachability.path_checks(plan, mtu),
            # While renumbering, every node moves at once and an address that answered before may belong to
            # another cable afterwards: only the controller and the extra hosts must keep answering then
            # (verify checks the mesh after). Otherwise the direct paths too, at the MTU.
            apply_targets=extra if renumbering else reachability.check_targets(extra, plan, mtu),
            renumbering=renumbering,
            layout={"kept": layout.get("kept", 0), "changes": list(layout.get("changes") or [])},
            mgmt_identity=identities.get(host) or ms.management_identity(me.get("addr") or "[]", connect),
            cabling=summary(names, cable_list, all_ports, params["link_prefix"]) if graph else {},
        )
    except ma.MeshAddressingError as exc:
        return {"errors": [str(exc)], "plan": {}}
    return {"errors": [], "plan": plan}


def summary(
    names: list[str], cable_list: list[dict[str, Any]], all_ports: Mapping[str, Any], prefix: Any
) -> dict[str, Any]:
    """What other roles need to know about the cabling: its shape, the node order along it, the hops
    between nodes, the transit nodes, and whether NCCL's built-in subnet routing can pick every port."""
    graph = cabling.Graph(names, cable_list)
    shape = graph.shape()
    order = graph.order()
    return {
        "shape": shape,
        "order": order,
        "link_prefix": int(prefix),
        "max_cables": graph.max_cables(),
        "cables": [cabling.cable_label(c) for c in cable_list],
        "transit": graph.transit(),
        "non_neighbours": any(graph.hops(a, b) not in (None, 0, 1) for a in names for b in names if a != b),
        "max_hops": max((graph.hops(a, b) or 0 for a in names for b in names), default=0),
        "device_index_problems": cabling.device_index_problems(graph, shape, order),
    }
