# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rules that keep the data-network role from cutting a node off or renumbering it silently.

Pure, typed functions over what the nodes report (`ip -j addr`, `ip -j route`, the netplan file the
role wrote last time) and the inventory; the mesh_network role's validate.yml calls them through the
filters in plugins/filter/mesh_safety.py before anything changes.

- management_errors: a data port that carries the address Ansible connects over, the default route,
  or an address on the management network.
- identity_errors: one node under two inventory names (same management address or MAC).
- mgmt_cidr_errors: a management network that holds none of a node's management addresses (the rules
  above judge "the management network" by it).
- unreachable_errors: a node of the plan that Ansible cannot reach in this run: the others alone would
  leave the cables to it with different settings at their two ends.
- read_netplan / anchored_layout: the addresses already in use win over list positions; a change of
  an existing link's subnet needs an explicit renumber.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import addressing as ma
from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import cabling, data_ports

try:
    from netaddr import AddrFormatError, IPAddress, IPNetwork
except ImportError:  # addressing.parse_pool reports the missing library first
    AddrFormatError = IPAddress = IPNetwork = None  # type: ignore[assignment,misc]


# --------------------------------------------------------------------------- node facts


def _json_list(text: Any, what: str) -> list[dict[str, Any]]:
    try:
        data = json.loads(text) if isinstance(text, str) else text
    except ValueError as exc:
        raise ma.MeshAddressingError(f"{what} output is not JSON: {str(text)[:80]!r}") from exc
    if data is None:
        return []
    if not isinstance(data, list):
        raise ma.MeshAddressingError(f"{what} output {str(text)[:80]!r} is not a list")
    return [entry for entry in data if isinstance(entry, dict)]


def ip_addresses(text: Any) -> dict[str, list[str]]:
    """{ifname: ['a.b.c.d', ...]} (IPv4) from `ip -j addr show`."""
    out: dict[str, list[str]] = {}
    for link in _json_list(text, "`ip -j addr`"):
        name = str(link.get("ifname") or "")
        if not name:
            continue
        out[name] = [
            str(info["local"])
            for info in link.get("addr_info") or []
            if info.get("family") == "inet" and info.get("local")
        ]
    return out


def default_route_devs(text: Any) -> list[str]:
    """Interfaces of the IPv4 default routes in `ip -j route show default` (or of a full table)."""
    devs: list[str] = []
    for route in _json_list(text, "`ip -j route`"):
        if route.get("dst") == "default" and route.get("dev") and route["dev"] not in devs:
            devs.append(str(route["dev"]))
    return devs


def _port_names(ports: Any, fabric_port: Any, topology: str, interfaces: Mapping[str, str]) -> dict[str, str]:
    """{ifname: what the inventory calls it} for the data ports that resolve on this node. ``fabric_port``:
    the one fabric port, or the list of them in rail order (mesh_network_fabric_ports)."""
    specs: dict[str, Any] = {}
    if topology == "switched":
        if isinstance(fabric_port, list):
            specs = {f"mesh_network_fabric_ports rail{i}": spec for i, spec in enumerate(fabric_port)}
        elif fabric_port:
            specs["mesh_network_fabric_port"] = fabric_port
    elif isinstance(ports, Mapping):
        specs = {f"port for peer {peer!r}": spec for peer, spec in ports.items()}
    out: dict[str, str] = {}
    for label, spec in specs.items():
        port, _err = data_ports.resolve_port(spec, interfaces, label)
        if port is not None:
            out[port["name"]] = label
    return out


def management_errors(
    host: str,
    topology: str,
    ports: Any,
    fabric_port: Any,
    interfaces: Mapping[str, str],
    addr_json: Any,
    route_json: Any,
    connect_addresses: Sequence[str],
    mgmt_cidr: Any,
) -> list[str]:
    """Data ports that would take over what keeps the node reachable, each message naming host, port, value.

    ``connect_addresses``: the addresses Ansible reaches the node at (ansible_host when it is an
    address, the server side of SSH_CONNECTION); names that are not addresses are skipped.
    """
    addrs = ip_addresses(addr_json)
    default_devs = default_route_devs(route_json)
    try:
        mgmt = IPNetwork(str(mgmt_cidr)).cidr
    except (AddrFormatError, ValueError, TypeError, NameError):
        mgmt = None
    connect = {a for a in connect_addresses if isinstance(a, str) and _is_ipv4(a)}
    errors: list[str] = []
    for ifname, label in _port_names(ports, fabric_port, topology, interfaces).items():
        held = [a for a in addrs.get(ifname, []) if a in connect]
        if held:
            errors.append(
                f"{host}: {label} is {ifname!r}, the interface holding {held[0]}, the address Ansible "
                "connects to; a data port must not be the management interface"
            )
            continue
        if ifname in default_devs:
            errors.append(
                f"{host}: {label} is {ifname!r}, the interface of the default route; "
                "a data port must not carry the default route"
            )
            continue
        on_mgmt = [a for a in addrs.get(ifname, []) if mgmt is not None and IPAddress(a) in mgmt]
        if on_mgmt:
            errors.append(
                f"{host}: {label} is {ifname!r}, which has {on_mgmt[0]} on the management network {mgmt}; "
                "a data port must not be on the management network"
            )
    return errors


def _is_ipv4(text: str) -> bool:
    parts = text.split(".")
    return len(parts) == 4 and all(p.isdigit() and int(p) < 256 for p in parts)


def management_identity(addr_json: Any, connect_addresses: Sequence[str]) -> dict[str, str]:
    """{ifname, address, macaddress} of the interface holding a connect address (empty values if none)."""
    connect = [a for a in connect_addresses if isinstance(a, str) and _is_ipv4(a)]
    for link in _json_list(addr_json, "`ip -j addr`"):
        for info in link.get("addr_info") or []:
            if info.get("family") == "inet" and info.get("local") in connect:
                return {
                    "ifname": str(link.get("ifname") or ""),
                    "address": str(info["local"]),
                    "macaddress": str(link.get("address") or "").lower(),
                }
    return {"ifname": "", "address": connect[0] if connect else "", "macaddress": ""}


def identity_errors(identities: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """One node under two inventory names: the same management address or MAC for two hosts.

    ``identities``: {inventory name: {address, macaddress}} (management_identity of each host, with
    ansible_host as the address where the node reported none).
    """
    errors: list[str] = []
    for key, what in (("address", "management address"), ("macaddress", "management MAC")):
        owners: dict[str, list[str]] = {}
        for host, ident in identities.items():
            value = str((ident or {}).get(key) or "").lower()
            if value:
                owners.setdefault(value, []).append(host)
        for value, hosts in owners.items():
            if len(hosts) > 1:
                errors.append(
                    f"{' and '.join(hosts)} have the same {what} {value}: one node under two inventory names"
                )
    return errors


# --------------------------------------------------------------------------- the plan already applied


def mgmt_cidr_errors(mgmt_cidr: Any, connect: Mapping[str, Sequence[str]]) -> list[str]:
    """The nodes none of whose management addresses is in ``mgmt_cidr``, named with their addresses.

    ``connect``: {host: the addresses Ansible reaches it at (ansible_host when it is an address, the server
    side of its SSH connection)}. A node known only by a name is not judged; a CIDR that does not parse is
    left to the pool checks, which name it."""
    if IPNetwork is None or not isinstance(mgmt_cidr, str) or "/" not in mgmt_cidr:
        return []
    try:
        net = IPNetwork(mgmt_cidr).cidr
    except (AddrFormatError, ValueError, TypeError):
        return []
    outside = []
    for host, addresses in connect.items():
        known = list(dict.fromkeys(a for a in addresses if isinstance(a, str) and _is_ipv4(a)))
        if known and not any(IPAddress(a) in net for a in known):
            outside.append(f"{host} ({', '.join(known)})")
    if not outside:
        return []
    return [
        f"mesh_network_mgmt_cidr {mgmt_cidr} does not contain the management address of "
        f"{', '.join(outside)}: it must be the network Ansible reaches the nodes over (the checks that keep "
        "the data ports off the management network judge by it)"
    ]


def unreachable_errors(hosts: Sequence[str], play_hosts: Sequence[str], reached: Sequence[str]) -> list[str]:
    """The nodes of the plan (``hosts``) that are in this play (``play_hosts``: ansible_play_hosts_all) but
    did not report (``reached``): unreachable, or failed in an earlier task. Nodes left out of the play
    (``--limit``) are not asked for."""
    gone = [h for h in hosts if h in play_hosts and h not in reached]
    if not gone:
        return []
    them = "it" if len(gone) == 1 else "them"
    return [
        f"{', '.join(gone)}: Ansible cannot reach {them} in this run (unreachable, or failed in an earlier "
        f"task, see above), and the data network spans every node of mesh_network_hosts: the others alone "
        f"would leave the cables to {them} with different settings at their two ends, so no node is changed. "
        f"Bring {them} back and run again, or pass -e mesh_network_allow_unreachable=true to go on "
        f"without {them}"
    ]


PEERS_COMMENT = re.compile(r"^# rdmaops-mesh-peers: (\{.*\})$", re.MULTILINE)


def read_netplan(doc: Any, nodeaddr_ifname: str, text: str = "") -> dict[str, Any]:
    """What a node's role-written netplan file holds: its node address and its links.

    Returns {node_address, links: [{ifname, address, prefix, subnet, peer_address, peer_node_address}]}
    (empty for no file). The peer of a link is named by its node address (the /32 route's target), and
    by ``peer``, the inventory name the role recorded in the file's ``# rdmaops-mesh-peers:`` comment line
    (``text`` is the raw file) when it did.
    """
    if not doc:
        return {"node_address": "", "links": []}
    network = doc.get("network") if isinstance(doc, Mapping) else None
    if not isinstance(network, Mapping):
        raise ma.MeshAddressingError(f"netplan document {str(doc)[:80]!r} has no 'network' mapping")
    node_address = ""
    bridge = (network.get("bridges") or {}).get(nodeaddr_ifname) or {}
    for cidr in bridge.get("addresses") or []:
        node_address = str(cidr).partition("/")[0]
    recorded: dict[str, str] = {}
    match = PEERS_COMMENT.search(text or "")
    if match:
        try:
            recorded = {str(k): str(v) for k, v in json.loads(match.group(1)).items()}
        except (ValueError, AttributeError):
            recorded = {}
    links: list[dict[str, Any]] = []
    for ifname, entry in (network.get("ethernets") or {}).items():
        if not isinstance(entry, Mapping):
            continue
        cidrs = [str(c) for c in entry.get("addresses") or []]
        routes = [r for r in entry.get("routes") or [] if isinstance(r, Mapping)]
        if len(cidrs) != 1 or not (routes or str(ifname) in recorded):
            continue  # not a mesh link of ours (switched fabric port, hand-made entry)
        net = IPNetwork(cidrs[0])
        if routes:
            # The first route is the peer's own node address, over this cable.
            peer_address = str(routes[0].get("via") or "")
            peer_node_address = str(routes[0].get("to") or "").partition("/")[0]
        else:
            # A further cable to the same peer (rails) carries no route: its far end is the subnet's other
            # address.
            ends = [IPAddress(net.first), IPAddress(net.first + 1)]
            if net.prefixlen < 31:
                ends = [IPAddress(net.first + 1), IPAddress(net.first + 2)]
            peer_address = str(next((e for e in ends if e != net.ip), ""))
            peer_node_address = ""
        links.append(
            {
                "ifname": str(ifname),
                "address": str(net.ip),
                "prefix": net.prefixlen,
                "subnet": str(net.cidr),
                "peer_address": peer_address,
                "peer_node_address": peer_node_address,
                "peer": recorded.get(str(ifname), ""),
            }
        )
    return {"node_address": node_address, "links": links}


def _declared_peer(ports: Any, ifname: str) -> str | None:
    """The peer whose declared port (by name) is ``ifname``."""
    if not isinstance(ports, Mapping):
        return None
    for peer, value in ports.items():
        if any(cabling.port_name(spec) == ifname for spec in cabling.port_specs(value)):
            return str(peer)
    return None


def anchored_layout(
    hosts: Any,
    existing: Mapping[str, Any],
    link_pool: Any,
    link_prefix: Any,
    node_pool: Any,
    renumber: bool = False,
    ports: Mapping[str, Any] | None = None,
    cables: Sequence[Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """Node addresses and cable subnets, the ones in use kept, new ones added.

    ``existing``: {host: read_netplan(...)} for the hosts whose file could be read; ``ports``: {host:
    mesh_network_ports}, used to name the peer of a link whose peer's file was not read (--limit,
    unreachable); ``cables``: the cabling (cabling.cables), one cable per pair when not given. Without
    anything in use this is exactly the positional plan (mesh_links / node_addresses). With addresses in
    use: each host keeps its node address and each cable keeps its subnet and both ends' addresses, whatever
    the order of ``hosts``; a new host or cable gets its positional value when that is free, else the first
    free one. A pair with several cables (rails) tells them apart by this host's port. ``changes`` lists the
    links whose subnet would differ from what is in use (only when the pool or prefix no longer holds it, or
    with renumber, which takes the positional plan); ``errors`` is non-empty when something in use would
    change and ``renumber`` is false.

    Returns {nodes: {host: address}, links: [{a, b, subnet, a_ip, b_ip}], kept: N, changes, errors}.
    """
    names = ma.check_hosts(hosts)
    lpool = ma.parse_pool(link_pool)
    plen = ma.parse_prefix(link_prefix, lpool)
    if cables is None:
        positional_links = ma.mesh_links(names, link_pool, link_prefix)
        cable_list = cabling.full_mesh_cables(names)
    else:
        cable_list = [dict(c) for c in cables]
        positional_links = ma.cable_links(names, cable_list, lpool, plen)
    positional_nodes = ma.node_addresses(names, node_pool)
    npool = ma.parse_pool(node_pool, "node pool")
    graph = cabling.Graph(names, cable_list)

    def cable_of(host: str, peer: str, ifname: str) -> tuple[str, str, int] | None:
        """The cable of this pair that ends on ``host``'s port ``ifname`` (the only one, if one)."""
        if host not in graph.index or peer not in graph.index:
            return None
        between = graph.cables_between(host, peer)
        if len(between) == 1:
            return (*graph.pair(host, peer), 0)
        for cable in between:
            side = cable["a_port"] if cable["a"] == host else cable["b_port"]
            if cabling.port_name(side) == ifname:
                return (cable["a"], cable["b"], int(cable["k"]))
        return None

    # Who is who: node addresses in use, and each cable's subnet with both ends' addresses.
    used_nodes: dict[str, str] = {}
    for host in names:
        address = str((existing.get(host) or {}).get("node_address") or "")
        if address:
            used_nodes[host] = address
    by_node_address = {addr: host for host, addr in used_nodes.items()}
    used_links: dict[tuple[str, str, int], dict[str, str]] = {}
    reserved: set[str] = set()
    conflicts: list[str] = []
    for host in names:
        for link in (existing.get(host) or {}).get("links") or []:
            reserved.add(str(link["subnet"]))
            peer = by_node_address.get(str(link.get("peer_node_address")))
            if peer is None and link.get("peer") in names:
                peer = str(link["peer"])  # recorded in the file by the run that wrote it
                if peer not in used_nodes and link.get("peer_node_address"):
                    used_nodes[peer] = str(link["peer_node_address"])
                    by_node_address[used_nodes[peer]] = peer
            if peer is None:
                peer = _declared_peer((ports or {}).get(host), str(link["ifname"]))
                if (
                    peer is not None
                    and peer in names
                    and peer not in used_nodes
                    and link.get("peer_node_address")
                ):
                    used_nodes[peer] = str(link.get("peer_node_address") or "")
                    by_node_address[used_nodes[peer]] = peer
            if peer is None or peer not in names:
                continue  # a peer no longer in the list (removed) or not read: keep its subnet reserved
            key = cable_of(host, peer, str(link["ifname"]))
            if key is None:
                continue  # no such cable any more: keep its subnet reserved
            seen = used_links.get(key)
            if seen is None:
                used_links[key] = {
                    "subnet": str(link["subnet"]),
                    host: str(link["address"]),
                    peer: str(link["peer_address"]),
                }
            elif seen["subnet"] != str(link["subnet"]):
                conflicts.append(
                    f"link {key[0]}-{key[1]}{f' cable {key[2] + 1}' if key[2] else ''}: {host}'s file has "
                    f"{link['subnet']}, the other end {seen['subnet']}"
                )

    def label(link: Mapping[str, Any]) -> str:
        k = int(link.get("k") or 0)
        return f"{link['a']}-{link['b']}" + (f" cable {k + 1}" if k else "")

    def key_of(link: Mapping[str, Any]) -> tuple[str, str, int]:
        return (*graph.pair(link["a"], link["b"]), int(link.get("k") or 0))

    changes: list[str] = []
    if renumber:
        for link in positional_links:
            old = used_links.get(key_of(link))
            if old is not None and (
                old["subnet"] != link["subnet"]
                or old.get(link["a"]) != link["a_ip"]
                or old.get(link["b"]) != link["b_ip"]
            ):
                changes.append(
                    f"{label(link)} {old['subnet']} -> {link['subnet']} "
                    f"({link['a']} {old.get(link['a'])} -> {link['a_ip']})"
                )
        for host, address in used_nodes.items():
            if positional_nodes[host] != address:
                changes.append(f"{host} node address {address} -> {positional_nodes[host]}")
        return {
            "nodes": positional_nodes,
            "links": positional_links,
            "kept": 0,
            "changes": changes,
            "errors": [],
        }

    # Keep what is in use where the pools still hold it.
    nodes: dict[str, str] = {}
    for host, address in used_nodes.items():
        if IPAddress(address) in npool:
            nodes[host] = address
        else:
            changes.append(f"{host} node address {address} is outside mesh_network_node_pool {npool.cidr}")
    keep: dict[tuple[str, str, int], dict[str, str]] = {}
    for key, old in used_links.items():
        net = IPNetwork(old["subnet"])
        if net.prefixlen == plen and net in lpool:
            keep[key] = old
            continue
        shown = f"{key[0]}-{key[1]}" + (f" cable {key[2] + 1}" if key[2] else "")
        if net not in lpool:
            changes.append(
                f"{shown} {old['subnet']} is outside mesh_network_link_pool {lpool.cidr} (/{plen} links)"
            )
        else:  # inside the pool; only the link size differs
            changes.append(
                f"{shown} {old['subnet']} is a /{net.prefixlen} link, mesh_network_link_prefix "
                f"asks for /{plen}"
            )
    errors = [*conflicts]
    if changes:
        errors.append(
            "these addresses in use would change: "
            + "; ".join(changes)
            + " (run with -e mesh_network_renumber=true to renumber the mesh)"
        )

    taken_nodes = set(nodes.values())
    free_nodes = (str(IPAddress(a)) for a in range(npool.first + 1, npool.last))
    for host in names:
        if host in nodes:
            continue
        candidate = positional_nodes[host]
        if candidate in taken_nodes:
            candidate = next(a for a in free_nodes if a not in taken_nodes)
        nodes[host] = candidate
        taken_nodes.add(candidate)

    taken_subnets = reserved | {old["subnet"] for old in keep.values()}
    free_subnets = (str(s) for s in lpool.subnet(plen))
    links: list[dict[str, Any]] = []
    kept = 0
    for link in positional_links:
        key = key_of(link)
        extra = {k: link[k] for k in ("a_port", "b_port", "k") if k in link}
        if key in keep:
            old = keep[key]
            links.append(
                {
                    "a": link["a"],
                    "b": link["b"],
                    "subnet": old["subnet"],
                    "a_ip": old[link["a"]],
                    "b_ip": old[link["b"]],
                    **extra,
                }
            )
            kept += 1
            continue
        subnet = link["subnet"]
        if subnet in taken_subnets:
            subnet = next((s for s in free_subnets if s not in taken_subnets), "")
            if not subnet:
                raise ma.MeshAddressingError(
                    f"pool {lpool.cidr} is too small: no free /{plen} subnet left for {label(link)}"
                )
        taken_subnets.add(subnet)
        net = IPNetwork(subnet)
        a_ip, b_ip = (net.first, net.first + 1) if plen == 31 else (net.first + 1, net.first + 2)
        links.append(
            {
                "a": link["a"],
                "b": link["b"],
                "subnet": subnet,
                "a_ip": str(IPAddress(a_ip)),
                "b_ip": str(IPAddress(b_ip)),
                **extra,
            }
        )
    return {"nodes": nodes, "links": links, "kept": kept, "changes": changes, "errors": errors}
