# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The mesh_network role's plan phase: the inventory and what every node reported in, ``{errors, plan}`` out,
once per run (the rules that span nodes, and every node's part of the plan).

One pure function (``plan``) behind the action plugin rdmaops.cluster.mesh_network_plan, which the role runs
once per run on the controller (``run_once``): the host list, the MTU, the pools, the cabling (every cable
listed by both ends, one connected graph) or the switched fabric (one port per rail on every node, the
scheme's subnets), one node under two inventory names, and the addresses in use (read back from every node's
netplan file). When none fails it numbers every node once: the cabling's shortest paths, each node's cables,
routes, hops and paths (``nodes``), the addresses every node reaches the others at and the fabric's rails
(``shared``), and the cabling's summary for other roles. Each node's own check (check.py, per host) then
takes its part, holds it against what that node reported (its interfaces, MTU, management path) and renders
its netplan: the per-host work stays linear in the cluster's size instead of recomputing the cluster.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import addressing as ma
from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import (
    cabling,
    data_ports,
    fabric,
    fabric_plan,
    host_plan,
)
from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import safety as ms
from ansible_collections.rdmaops.cluster.plugins.module_utils.phase_module import required_raw

SETTINGS = (
    "fabric_scheme",
    "fabric_table_base",
    "rail_subnets",
    "rail_pool",
    "rail_prefix",
    "leaf_pool",
    "leaf_routes",
)

MESH_NETWORK_PLAN_SPEC: dict[str, Any] = {
    **required_raw(
        "hosts", "mgmt_cidr", "link_pool", "link_prefix", "node_pool", "fabric_subnet", "mtu", *SETTINGS
    ),
    "topology": {"type": "str", "required": True, "choices": ["mesh", "switched"]},
    "ports": {"type": "dict", "default": {}},
    "fabric_ports": {"type": "dict", "default": {}},
    "fabric_port": {"type": "dict", "default": {}},
    "nodeaddr_ifname": {"type": "str", "required": True},
    "renumber": {"type": "bool", "default": False},
    "nodes": {"type": "dict", "required": True},
    # every host of the play, those that failed earlier too (ansible_play_hosts_all): a host of the plan in
    # it without facts in ``nodes`` could not be reached
    "play_hosts": {"type": "list", "elements": "str", "default": []},
    "allow_unreachable": {"type": "bool", "default": False},
    # a full mesh of 3+ nodes or a ring: a second route to each node address via another neighbour (backup.py)
    "backup_routes": {"type": "bool", "default": True},
}


def _node(nodes: Mapping[str, Any], host: str) -> Mapping[str, Any]:
    value = nodes.get(host)
    return value if isinstance(value, Mapping) else {}


def _in_effect(inventory: Mapping[str, Any], nodes: Mapping[str, Any], key: str) -> dict[str, Any]:
    """Every node's setting: the inventory's, replaced by what each node of the play had in effect (role
    vars included)."""
    out = dict(inventory or {})
    out.update({h: _node(nodes, h)[key] for h in nodes if key in _node(nodes, h)})
    return out


def plan(params: Mapping[str, Any]) -> dict[str, Any]:
    """{errors: [...], plan: {nodes, shared, cabling}}: every message naming its bad value, or the cluster's
    plan: ``nodes`` {host: its part}, ``shared`` (what every node's check takes whole: hosts, peers, fabric,
    layout, renumbering) and ``cabling`` (a mesh's summary, {} when switched)."""
    topology = str(params["topology"])
    nodes = dict(params["nodes"] or {})
    errors: list[str] = []
    try:
        names = ma.check_hosts(params["hosts"])
    except ma.MeshAddressingError as exc:
        names = []
        errors.append(str(exc))
    errors += data_ports.mtu_errors(str(params["mtu"]), "mesh_network_mtu")
    play_hosts = list(params.get("play_hosts") or [])
    if not params.get("allow_unreachable"):
        errors += ms.unreachable_errors(names, play_hosts, list(nodes))
    # Every play host's management address and MAC: two inventory names for one node are refused, named
    # in the inventory's order on every run.
    order = [h for h in names if h in nodes] + sorted(h for h in nodes if h not in names)
    try:
        identities = {
            h: ms.management_identity(
                _node(nodes, h).get("addr") or "[]", list(_node(nodes, h).get("connect") or [])
            )
            for h in order
        }
        errors += ms.identity_errors(identities)
    except ma.MeshAddressingError as exc:
        errors.append(str(exc))
    errors += ms.mgmt_cidr_errors(
        params["mgmt_cidr"], {h: list(_node(nodes, h).get("connect") or []) for h in order}
    )
    if topology == "mesh":
        return _mesh(params, names, nodes, errors)
    return _switched(params, names, nodes, errors)


def _mesh(
    params: Mapping[str, Any], names: list[str], nodes: Mapping[str, Any], errors: list[str]
) -> dict[str, Any]:
    pools = {"mesh_network_link_pool": params["link_pool"], "mesh_network_node_pool": params["node_pool"]}
    # A pool that does not parse is named once, by its variable: the plan is checked only on good pools.
    pool_errors = ma.pool_errors(pools, params["mgmt_cidr"])
    errors += pool_errors
    all_ports = _in_effect(params["ports"], nodes, "ports")
    plan_errors = (
        []
        if pool_errors
        else ma.plan_errors(
            names,
            "mesh",
            params["link_pool"],
            params["link_prefix"],
            params["node_pool"],
            params["fabric_subnet"],
            ports=all_ports,
        )
    )
    errors += plan_errors
    cable_list, cable_errors = cabling.cables(names, all_ports)
    errors += cable_errors
    graph = cabling.Graph(names, cable_list)
    errors += cabling.connectivity_errors(graph)
    layout: dict[str, Any] = {}
    if names and not pool_errors and not plan_errors:
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
    if errors or not names:
        return {"errors": errors, "plan": {}}
    return {
        "errors": [],
        "plan": {
            "nodes": host_plan.mesh_parts(
                names,
                graph,
                layout["links"],
                layout["nodes"],
                backups=bool(params.get("backup_routes", True)),
            ),
            "shared": {
                "hosts": names,
                "peers": dict(layout["nodes"]),
                "fabric": {},
                "layout": {"kept": layout.get("kept", 0), "changes": list(layout.get("changes") or [])},
                "renumbering": bool(params["renumber"]) and bool(layout.get("changes")),
            },
            "cabling": summary(graph, params["link_prefix"], bool(params.get("backup_routes", True))),
            "unreachable": unreachable(params, names, nodes),
        },
    }


def _switched(
    params: Mapping[str, Any], names: list[str], nodes: Mapping[str, Any], errors: list[str]
) -> dict[str, Any]:
    given_lists = _in_effect(params["fabric_ports"], nodes, "fabric_ports")
    given_ports = _in_effect(params["fabric_port"], nodes, "fabric_port")
    lists: dict[str, list[Any]] = {}
    for host in names:
        many, one = given_lists.get(host), given_ports.get(host)
        if host not in nodes and not many and not one:
            continue  # outside the play, and its inventory does not say: nothing to hold against the others
        problems = fabric.list_errors(host, many, one)
        errors += problems
        if not problems:
            lists[host] = fabric.node_ports(many, one)
    errors += fabric.port_errors(names, lists)
    counts = [len(v) for v in lists.values()]
    rails = max(set(counts), key=lambda c: (counts.count(c), c)) if counts else 1
    settings = fabric.Settings(params["fabric_subnet"], **{key: params[key] for key in SETTINGS})
    parsed, setting_errors = fabric.parse_settings(
        settings, len(names), rails, params["mgmt_cidr"], params["node_pool"]
    )
    errors += setting_errors
    if errors or parsed is None or not names:
        return {"errors": errors, "plan": {}}
    try:
        table = fabric_plan.rail_addresses(names, parsed)
    except ma.MeshAddressingError as exc:
        return {"errors": [str(exc)], "plan": {}}
    # Every NIC's interface and MAC, as its node reported them: each plan names the NIC behind a peer address.
    table = fabric_plan.rail_nics(table, lists, {h: _node(nodes, h).get("addr") for h in nodes})
    # Addresses in use (the nodes' own files) move only when asked: a new scheme, subnet or host order would.
    files = {h: _node(nodes, h).get("netplan") for h in nodes}
    kept, changes = fabric_plan.changes_in_use(names, table, lists, files)
    renumber = bool(params["renumber"])
    if changes and not renumber:
        return {
            "errors": [
                "these addresses in use would change: "
                + "; ".join(changes)
                + " (run with -e mesh_network_renumber=true to renumber the fabric)"
            ],
            "plan": {},
        }
    return {
        "errors": [],
        "plan": {
            "nodes": {h: {"index": k} for k, h in enumerate(names)},
            "shared": {
                "hosts": names,
                "peers": {h: entries[0]["address"] for h, entries in table.items()},
                "fabric": {"scheme": parsed.scheme, "leaf_routes": parsed.leaf_routes, "rails": table},
                "layout": {"kept": kept, "changes": changes},
                "renumbering": bool(changes),
            },
            "cabling": {},
            "unreachable": unreachable(params, names, nodes),
        },
    }


def unreachable(params: Mapping[str, Any], names: Sequence[str], nodes: Mapping[str, Any]) -> list[str]:
    """The hosts of the plan this run goes on without (mesh_network_allow_unreachable): in the play, no
    facts."""
    return [h for h in names if h in (params.get("play_hosts") or []) and h not in nodes]


def summary(graph: cabling.Graph, prefix: Any, backups: bool = False) -> dict[str, Any]:
    """What other roles need to know about the cabling: its shape, the node order along it, the hops
    between nodes, the transit nodes, whether NCCL's built-in subnet routing can pick every port, and which
    backup routes the nodes have (backup.py: 'full_mesh' or '')."""
    names: Sequence[str] = graph.hosts
    shape = graph.shape()
    order = graph.order()
    hops = [graph.hops(a, b) for a in names for b in names if a != b]
    return {
        "shape": shape,
        "order": order,
        "link_prefix": int(prefix),
        "max_cables": graph.max_cables(),
        "cables": [cabling.cable_label(c) for c in graph.cables],
        "transit": graph.transit(),
        "non_neighbours": any(h not in (None, 0, 1) for h in hops),
        "max_hops": max((h or 0 for h in hops), default=0),
        "device_index_problems": cabling.device_index_problems(graph, shape, order),
        "backup": graph.backup_kind() if backups else "",
    }
