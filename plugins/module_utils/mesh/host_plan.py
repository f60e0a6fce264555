# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One node's plan, and the netplan document that configures it.

host_plan: what one node needs (its node address, the interface sockets bind, each cable's port, addresses
and routes, the hops and path to every peer), from the pools' numbering (addressing) or the addresses in
use (safety.anchored_layout), the node's ports (data_ports) and the cabling graph (cabling).
netplan_document renders a plan as netplan v2; expected_addresses lists the addresses it configures, which
netplan_apply checks after the apply.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import backup as mb
from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import cabling, fabric_plan
from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh.addressing import (
    MeshAddressingError,
    cable_links,
    check_hosts,
    node_addresses,
    parse_pool,
    parse_prefix,
    switched_addresses,
)
from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh.data_ports import (
    mtu_errors,
    port_entry,
    port_errors,
    resolve_port,
)
from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh.fabric import Fabric

# --------------------------------------------------------------------------- per-host plan


def resolved_port(spec: Any, interfaces: Mapping[str, str]) -> dict[str, str]:
    """{name, macaddress} of the interface a port names, or an error naming the port."""
    port, err = resolve_port(spec, interfaces, "port")
    if port is None:
        raise MeshAddressingError(err or f"port {spec!r} cannot be resolved")
    return port


def host_plan(
    host: str,
    hosts: Any,
    topology: str,
    *,
    ports: Mapping[str, Any] | None = None,
    all_ports: Mapping[str, Any] | None = None,
    fabric_port: Any = None,
    interfaces: Mapping[str, str] | None = None,
    link_pool: str,
    link_prefix: Any,
    node_pool: str,
    fabric_subnet: str,
    nodeaddr_ifname: str,
    layout: Mapping[str, Any] | None = None,
    backups: bool = False,
) -> dict[str, Any]:
    """What one host needs: its node address, the interface sockets should bind, its cables and routes.

    ``ports`` is this host's mesh_network_ports, ``all_ports`` every host's (the cabling graph; this host's
    entry is replaced by ``ports``). The pools and names have no defaults here: the mesh_network role's
    defaults own them. ``layout`` (safety.anchored_layout: node addresses and cable subnets, the ones in use
    kept) replaces the positional numbering when given. A switched fabric here is one port per node (the
    role plans several through cluster.py).

    Each link (one per cable of this host) carries ``routes``: the hosts whose node address is routed over
    it, along a shortest path (cabling.Graph.next_hop); a pair's further cables (rails) carry none. With
    ``backups`` (the role's default) a full mesh of 3+ nodes or a ring also gets its backup routes
    (backup.py).
    """
    names = check_hosts(hosts)
    if host not in names:
        raise MeshAddressingError(f"host {host!r} is not in the host list {names!r}")
    ifaces = dict(interfaces or {})
    errors = port_errors(host, names, topology, ports or {}, fabric_port, ifaces)
    if errors:
        raise MeshAddressingError("; ".join(errors))
    if topology == "switched":
        switched_addresses(names, fabric_subnet)  # the size rule, with today's message
        one = Fabric("shared", 1, [parse_pool(fabric_subnet, "subnet")], None, [])
        return fabric_plan.node_plan(
            host, names, fabric_plan.rail_addresses(names, one), [resolved_port(fabric_port, ifaces)]
        )
    mine = dict(ports or {})
    if all_ports is None:
        # Only this host's ports are known: the others are taken to cable every pair (a full mesh), each
        # facing this host with as many cables as it lists, ports unnamed.
        unnamed = {"name": ""}
        every = {
            h: {
                p: [unnamed] * (len(cabling.port_specs(mine.get(h))) if p == host else 1)
                for p in names
                if p != h
            }
            for h in names
            if h != host
        }
    else:
        every = {h: v for h, v in dict(all_ports).items() if h in names}
    every[host] = mine
    cable_list, cable_errors = cabling.cables(names, every)
    if cable_errors:
        raise MeshAddressingError("; ".join(cable_errors))
    graph = cabling.Graph(names, cable_list)
    nodes = dict(layout["nodes"]) if layout else node_addresses(names, node_pool)
    if layout:
        all_links = list(layout["links"])
    else:
        net = parse_pool(link_pool)
        all_links = cable_links(names, cable_list, net, parse_prefix(link_prefix, net))
    part = mesh_parts(names, graph, all_links, nodes, only=[host], backups=backups)[host]
    return mesh_node_plan(host, names, part, nodes, ifaces, nodeaddr_ifname)


def mesh_parts(
    names: Sequence[str],
    graph: cabling.Graph,
    all_links: Sequence[Mapping[str, Any]],
    nodes: Mapping[str, str],
    only: Sequence[str] | None = None,
    backups: bool = False,
) -> dict[str, dict[str, Any]]:
    """What each node's plan takes from the cabling and the numbering (cluster.py computes it once for all):
    {host: {index, links, hops, paths, transit, backup}}, each link with this node's own port as the
    inventory gives it (``port``: the node resolves it against its interfaces), the nodes routed over it
    and, with ``backups`` where the cabling allows them (backup.py), the nodes whose backup route it carries;
    ``backup`` is the kind ('full_mesh' or '')."""
    index = {h: k for k, h in enumerate(names)}
    by_cable = {(c["a"], c["b"], c["k"]): c for c in graph.cables}
    wanted = list(only) if only is not None else list(names)
    links_of: dict[str, list[Mapping[str, Any]]] = {h: [] for h in wanted}
    for link in all_links:
        for end in (link["a"], link["b"]):
            if end in links_of:
                links_of[end].append(link)
    transit = set(graph.transit())
    kind = graph.backup_kind() if backups else ""
    # a ring's transit tables route the node addresses (backup.py); one prefix when no cable's subnet is in it
    prefixes = (
        mb.transit_prefixes(nodes, [str(link["subnet"]) for link in all_links]) if kind == "ring" else []
    )
    # every pair's path at once for the cluster; one node's alone (host_plan) costs its own paths only
    every_path = graph.paths() if only is None else {h: {d: graph.path(h, d) for d in names} for h in wanted}
    out: dict[str, dict[str, Any]] = {}
    for host in wanted:
        routed: dict[str, list[str]] = {}
        for dst, step in graph.next_hops(host).items():
            routed.setdefault(step, []).append(dst)
        backed = mb.by_neighbour(graph.backup_hops(host), index) if kind else {}
        tables = mb.ring_tables(graph.neighbours[host]) if kind == "ring" else {}
        links: list[dict[str, Any]] = []
        for link in links_of[host]:
            k = int(link.get("k") or 0)
            cable = by_cable.get((link["a"], link["b"], k))
            if cable is None:
                continue  # a layout entry for a cable that is gone
            me_a = link["a"] == host
            peer = link["b"] if me_a else link["a"]
            links.append(
                {
                    "peer": peer,
                    "k": k,
                    "port": cable["a_port"] if me_a else cable["b_port"],
                    "peer_port": cabling.port_name(cable["b_port"] if me_a else cable["a_port"]),
                    "cable": cabling.cable_label(cable),
                    "subnet": link["subnet"],
                    "prefix": int(link["subnet"].split("/")[1]),
                    "address": link["a_ip"] if me_a else link["b_ip"],
                    "peer_address": link["b_ip"] if me_a else link["a_ip"],
                    "peer_node_address": nodes[peer],
                    # The peer's own node address first: read_netplan names a link's peer by its first route.
                    "routes": sorted(routed.get(peer, []), key=lambda h: (h != peer, index[h]))
                    if k == 0
                    else [],
                    "backups": backed.get(peer, []) if k == 0 else [],
                    "transit_routes": mb.transit_routes(peer, tables, prefixes) if k == 0 and tables else [],
                }
            )
        links.sort(key=lambda entry: (index[entry["peer"]], entry["k"]))
        out[host] = {
            "index": index[host],
            "links": links,
            "hops": {h: graph.hops(host, h) for h in names if h != host},
            "paths": {h: every_path[host].get(h, []) for h in names if h != host},
            "transit": host in transit,
            "backup": kind,
            # where each node address goes while its route's first cable is out (verify's DEGRADED)
            "backup_paths": graph.backup_paths(host) if kind else {},
            "ring_tables": tables,
        }
    return out


def mesh_node_plan(
    host: str,
    names: Sequence[str],
    part: Mapping[str, Any],
    nodes: Mapping[str, str],
    interfaces: Mapping[str, str],
    nodeaddr_ifname: str,
) -> dict[str, Any]:
    """One node's mesh plan from its part (mesh_parts) and every node's address: its ports resolved against
    its interfaces (by name or MAC), the forwarding of a node that others' traffic crosses, and with backup
    routes (backup.py) their sysctls."""
    links = []
    for link in part["links"]:
        port = resolved_port(link["port"], interfaces)
        rest = {key: value for key, value in link.items() if key not in ("peer", "k", "port")}
        links.append(
            {
                "peer": link["peer"],
                "k": link["k"],
                "ifname": port["name"],
                "macaddress": port["macaddress"],
                **rest,
            }
        )
    kind = str(part.get("backup") or "")
    forwarding = [entry["ifname"] for entry in links] if part["transit"] or kind else []
    rules = mb.transit_rules(links, part.get("ring_tables") or {})
    return {
        "host": host,
        "index": part["index"],
        "topology": "mesh",
        "node_address": nodes[host],
        "socket_ifname": nodeaddr_ifname,
        "links": links,
        "fabric": None,
        "rails": [],
        "peers": {h: nodes[h] for h in names if h != host},
        "hops": dict(part["hops"]),
        "paths": dict(part["paths"]),
        # Packets between two other nodes pass here (a path, or a backup route): the data ports forward them.
        "forwarding": forwarding,
        "sysctl": mb.sysctl(forwarding, bool(part["transit"]), kind),
        "backup": kind,
        "backup_paths": dict(part.get("backup_paths") or {}),
        # a ring's transit rules (backup.py): the networkd drop-in the role writes, or removes ('')
        "networkd_dropin": {"path": mb.dropin_path(nodeaddr_ifname), "content": mb.dropin(host, rules)},
    }


# --------------------------------------------------------------------------- netplan


def netplan_document(plan: Mapping[str, Any], mtu: Any) -> dict[str, Any]:
    """The netplan v2 document for the data ports in ``plan`` (networkd renderer)."""
    errors = mtu_errors(mtu, "mtu")
    if errors:
        raise MeshAddressingError(errors[0])
    mtu_value = int(mtu)
    ethernets: dict[str, Any] = {}
    network: dict[str, Any] = {"version": 2, "ethernets": ethernets}

    if plan["topology"] == "switched":
        ethernets.update(fabric_plan.ethernets(plan, mtu_value))
        return {"network": network}

    own = plan["node_address"]
    peers = plan["peers"]
    for link in plan["links"]:
        entry = port_entry(link["ifname"], link["macaddress"], mtu_value)
        entry["addresses"] = [f"{link['address']}/{link['prefix']}"]
        # Host routes to the node addresses behind this cable (the peer's, and those reached through it),
        # sourced from our node address, so sockets bound to the node address stay on the data cables; then
        # the backup routes it carries (backup.py).
        routes = mb.link_routes(link, own, peers)
        if routes:
            entry["routes"] = routes
        ethernets[link["ifname"]] = entry
    # An empty bridge holds the node address: it is always up (ignore-carrier) and,
    # unlike lo, gives gloo/NCCL an interface name that resolves to that address.
    network["bridges"] = {
        plan["socket_ifname"]: {
            "renderer": "networkd",
            "interfaces": [],
            "addresses": [f"{own}/32"],
            "ignore-carrier": True,
            "link-local": [],
        }
    }
    return {"network": network}


def expected_addresses(plan: Mapping[str, Any]) -> list[dict[str, str]]:
    """(ifname, address/len) pairs the plan configures, for netplan_apply's expect_addresses."""
    if plan.get("topology") == "switched":
        return [{"ifname": r["ifname"], "address": f"{r['address']}/{r['prefix']}"} for r in plan["rails"]]
    out = [
        {"ifname": link["ifname"], "address": f"{link['address']}/{link['prefix']}"} for link in plan["links"]
    ]
    out.append({"ifname": plan["socket_ifname"], "address": f"{plan['node_address']}/32"})
    return out
