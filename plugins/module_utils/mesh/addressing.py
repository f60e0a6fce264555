# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Address plans for direct-connect meshes and switched fabrics.

Pure, typed functions (netaddr only) that the filter plugins in
plugins/filter/mesh.py wrap. Every number handed out here depends only on a host's
position in the host list, so appending a host never renumbers existing ones; the role
anchors addresses already in use on top of this (mesh_safety.anchored_layout), so a
reorder or a removal does not renumber either.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import cabling
from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import ping as ping_cmd

try:
    from netaddr import AddrFormatError, IPAddress, IPNetwork

    HAS_NETADDR = True
except ImportError:  # reported by parse_pool, the one entry to netaddr
    HAS_NETADDR = False


class MeshAddressingError(ValueError):
    """Raised for bad input; the message always names the offending value."""


# --------------------------------------------------------------------------- basics


def parse_pool(value: Any, what: str = "pool") -> IPNetwork:
    """Parse an IPv4 CIDR string; reject host bits so a typo is not silently 'fixed'."""
    if not HAS_NETADDR:
        raise MeshAddressingError(
            "the Python library netaddr is required on the controller (pip install netaddr)"
        )
    if not isinstance(value, str) or "/" not in value:
        raise MeshAddressingError(f"{what} {value!r} is not a CIDR string such as '192.168.100.0/22'")
    try:
        net = IPNetwork(value)
    except (AddrFormatError, ValueError, TypeError) as exc:
        raise MeshAddressingError(f"{what} {value!r} is not a valid CIDR: {exc}") from exc
    if net.version != 4:
        raise MeshAddressingError(f"{what} {value!r} is not IPv4 (only IPv4 fabrics are supported)")
    if net.ip != net.network:
        raise MeshAddressingError(f"{what} {value!r} has host bits set; did you mean '{net.cidr}'?")
    return net


def parse_prefix(value: Any, pool: IPNetwork, what: str = "prefix") -> int:
    """A link prefix must fit in the pool and leave two usable addresses (/31 is allowed, RFC 3021)."""
    if isinstance(value, bool):
        raise MeshAddressingError(f"{what} {value!r} is not an integer")
    try:
        prefix = int(value)
    except (TypeError, ValueError) as exc:
        raise MeshAddressingError(f"{what} {value!r} is not an integer") from exc
    if str(value).strip() != str(prefix):
        raise MeshAddressingError(f"{what} {value!r} is not an integer")
    if prefix > 31:
        raise MeshAddressingError(f"{what} {value!r} is too long: a link needs two addresses (at most /31)")
    if prefix < pool.prefixlen:
        raise MeshAddressingError(
            f"{what} {value!r} is shorter than the pool {pool.cidr} (/{pool.prefixlen})"
        )
    return prefix


def check_hosts(hosts: Any) -> list[str]:
    """Hosts must be a list of unique, non-empty strings; order is the numbering."""
    if isinstance(hosts, (str, bytes)) or not isinstance(hosts, Iterable):
        raise MeshAddressingError(f"hosts {hosts!r} is not a list of host names")
    out: list[str] = []
    seen: set[str] = set()
    for host in hosts:
        if not isinstance(host, str) or not host:
            raise MeshAddressingError(f"host name {host!r} is not a non-empty string")
        if host in seen:
            raise MeshAddressingError(f"duplicate host {host!r} in the host list")
        seen.add(host)
        out.append(host)
    return out


def pair_index(i: int, j: int) -> int:
    """Index of the unordered pair {i, j} in 'order of first possibility'.

    Pairs among hosts 0..k-1 take indexes 0..k(k-1)/2-1; host k's pairs come next
    (k, 0), (k, 1), ... (k, k-1). So appending host k only adds indexes at the end.
    """
    if i == j or i < 0 or j < 0:
        raise MeshAddressingError(f"pair ({i}, {j}) is not a pair of two different hosts")
    lo, hi = (i, j) if i < j else (j, i)
    return hi * (hi - 1) // 2 + lo


def _nth_subnet(pool: IPNetwork, prefix: int, index: int) -> IPNetwork:
    step = 1 << (32 - prefix)
    capacity = pool.size // step
    if index >= capacity:
        raise MeshAddressingError(
            f"pool {pool.cidr} is too small: it holds {capacity} /{prefix} subnets, "
            f"subnet #{index + 1} is needed"
        )
    return IPNetwork(f"{IPAddress(pool.first + index * step)}/{prefix}")


def _link_ends(subnet: IPNetwork) -> tuple[IPAddress, IPAddress]:
    # /31 has no network/broadcast address (RFC 3021); otherwise skip the network address.
    if subnet.prefixlen == 31:
        return IPAddress(subnet.first), IPAddress(subnet.first + 1)
    return IPAddress(subnet.first + 1), IPAddress(subnet.first + 2)


# --------------------------------------------------------------------------- plans


def mesh_links(
    hosts: Any, pool: Any, prefix: Any, ports: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    """One entry per cable: {a, b, subnet, a_ip, b_ip} (with ``ports``: also a_port, b_port, k).

    Without ``ports`` every node pair has one cable (a full mesh), as before. With ``ports`` ({host:
    mesh_network_ports}) the cables are the ones both ends list (module_utils/mesh/cabling.py). ``a`` is
    the host that comes first in ``hosts``; entries are ordered by pair index, then cable.
    """
    names = check_hosts(hosts)
    net = parse_pool(pool)
    plen = parse_prefix(prefix, net)
    if ports is None:
        cable_list = cabling.full_mesh_cables(names)
    else:
        cable_list, errors = cabling.cables(names, ports)
        if errors:
            raise MeshAddressingError("; ".join(errors))
    links = cable_links(names, cable_list, net, plen)
    if ports is None:
        for link in links:
            del link["a_port"], link["b_port"], link["k"]
    return links


def cable_links(
    names: Sequence[str], cable_list: Sequence[Mapping[str, Any]], net: IPNetwork, plen: int
) -> list[dict[str, Any]]:
    """The positional subnet of every cable, from the pool's bottom and top.

    A pair's first cable takes subnet number pair_index(i, j), as in a full mesh, so today's meshes keep
    their numbers and appending a host only adds subnets. A pair's further cables (rails) take subnets from
    the top of the pool down, in the order of (pair index, cable), so they never move a first cable's subnet.
    """
    capacity = net.size >> (32 - plen)
    index = {h: k for k, h in enumerate(names)}
    ordered = sorted(
        cable_list, key=lambda c: (pair_index(index[c["a"]], index[c["b"]]), int(c.get("k") or 0))
    )
    extra = [c for c in ordered if int(c.get("k") or 0) > 0]
    firsts = [pair_index(index[c["a"]], index[c["b"]]) for c in ordered if not int(c.get("k") or 0)]
    needed = (max(firsts) + 1 if firsts else 0) + len(extra)
    if needed > capacity:
        pairs = len(names) * (len(names) - 1) // 2
        if not extra and len(firsts) == pairs:
            raise MeshAddressingError(
                f"pool {net.cidr} is too small: it holds {capacity} /{plen} subnets, "
                f"{len(names)} hosts need {needed} (one per pair)"
            )
        raise MeshAddressingError(
            f"pool {net.cidr} is too small: it holds {capacity} /{plen} subnets, the cables of "
            f"{len(names)} hosts need {needed} (a pair's first cable takes subnet number j(j-1)/2+i of its "
            f"positions i < j in the host list, further cables {len(extra)} from the top)"
        )
    links: list[dict[str, Any]] = []
    rank = 0
    for cable in ordered:
        k = int(cable.get("k") or 0)
        if k == 0:
            slot = pair_index(index[cable["a"]], index[cable["b"]])
        else:
            slot = capacity - 1 - rank
            rank += 1
        subnet = _nth_subnet(net, plen, slot)
        a_ip, b_ip = _link_ends(subnet)
        links.append(
            {
                "a": cable["a"],
                "b": cable["b"],
                "subnet": str(subnet),
                "a_ip": str(a_ip),
                "b_ip": str(b_ip),
                "a_port": cable.get("a_port", ""),
                "b_port": cable.get("b_port", ""),
                "k": k,
            }
        )
    return links


def _nth_host(net: IPNetwork, index: int, what: str) -> IPAddress:
    # Host k gets the (k+1)-th address: the network address is skipped, and so is
    # the broadcast address, so the plan reads naturally (.1, .2, ...).
    usable = net.size - 2 if net.prefixlen < 31 else net.size
    first = net.first + 1 if net.prefixlen < 31 else net.first
    if index >= usable:
        raise MeshAddressingError(
            f"{what} {net.cidr} is too small: it has {usable} host addresses, address #{index + 1} is needed"
        )
    return IPAddress(first + index)


def switched_addresses(hosts: Any, subnet: Any) -> dict[str, dict[str, Any]]:
    """One address per host in a single shared subnet: {host: {address, prefix, cidr}}."""
    names = check_hosts(hosts)
    net = parse_pool(subnet, "subnet")
    if names:
        _nth_host(net, len(names) - 1, "subnet")
    out: dict[str, dict[str, Any]] = {}
    for k, host in enumerate(names):
        addr = _nth_host(net, k, "subnet")
        out[host] = {"address": str(addr), "prefix": net.prefixlen, "cidr": f"{addr}/{net.prefixlen}"}
    return out


def node_addresses(hosts: Any, pool: Any) -> dict[str, str]:
    """A stable /32 node address per host: {host: address}."""
    names = check_hosts(hosts)
    net = parse_pool(pool, "node pool")
    if names:
        _nth_host(net, len(names) - 1, "node pool")
    return {host: str(_nth_host(net, k, "node pool")) for k, host in enumerate(names)}


# --------------------------------------------------------------------------- validation


MTU_MIN = 1280  # the IPv6 minimum link MTU: anything smaller on a data port is a typo
MTU_MAX = 9216  # the largest jumbo frame common switches carry


def mtu_errors(mtu: Any, name: str) -> list[str]:
    """The MTU rule: a whole number (written as digits) in MTU_MIN..MTU_MAX; ``name`` labels the value."""
    digits = not isinstance(mtu, bool) and (
        isinstance(mtu, int) or re.fullmatch(r"[0-9]+", str(mtu)) is not None
    )
    if digits and MTU_MIN <= int(mtu) <= MTU_MAX:
        return []
    shown = repr(str(mtu)) if isinstance(mtu, str) else repr(mtu)  # str(): a plain str, not a tagged subclass
    return [f"{name} {shown} must be an integer in {MTU_MIN}..{MTU_MAX}"]


def port_mtu_errors(host: str, mtu: Any, ip_link_details: Any, ports: Sequence[str]) -> list[str]:
    """The MTU against what each data port can carry: ``maxmtu`` of ``ip -d -j link`` (or ``ip -d -j addr``),
    checked before anything is applied (a veth or a NIC refuses a larger MTU only when it is set)."""
    try:
        links = json.loads(ip_link_details) if isinstance(ip_link_details, str) else ip_link_details
    except ValueError:
        return [f"{host}: `ip -d -j link` output is not JSON: {str(ip_link_details)[:80]!r}"]
    if not isinstance(links, list) or mtu_errors(mtu, "mtu"):
        return []  # the MTU's own rule, and the port checks, report those
    by_name = {str(link.get("ifname")): link for link in links if isinstance(link, Mapping)}
    errors = []
    for port in ports:
        largest = (by_name.get(port) or {}).get("max_mtu")
        if isinstance(largest, int) and int(mtu) > largest:
            errors.append(
                f"{host}: mesh_network_mtu {int(mtu)} is larger than port {port}'s maxmtu {largest} "
                "(`ip -d link show " + port + "`): lower mesh_network_mtu or use ports that carry it"
            )
    return errors


def pool_errors(pools: Mapping[str, Any], mgmt_cidr: Any) -> list[str]:
    """Messages for unparsable pools, pools that overlap each other, or the management network."""
    if not HAS_NETADDR:
        return ["the Python library netaddr is required on the controller (pip install netaddr)"]
    errors: list[str] = []
    parsed: dict[str, IPNetwork] = {}
    for name, value in pools.items():
        try:
            parsed[name] = parse_pool(value, name)
        except MeshAddressingError as exc:
            errors.append(str(exc))
    mgmt: IPNetwork | None = None
    try:
        mgmt = IPNetwork(mgmt_cidr).cidr if isinstance(mgmt_cidr, str) and "/" in mgmt_cidr else None
    except (AddrFormatError, ValueError, TypeError):
        mgmt = None
    if mgmt is None:
        errors.append(f"mesh_network_mgmt_cidr {mgmt_cidr!r} is not a CIDR such as '10.0.0.0/24'")
    names = list(parsed)
    for x, a in enumerate(names):
        for b in names[x + 1 :]:
            if parsed[a] in parsed[b] or parsed[b] in parsed[a] or _overlap(parsed[a], parsed[b]):
                errors.append(f"{a} {parsed[a].cidr} overlaps {b} {parsed[b].cidr}")
        if mgmt is not None and _overlap(parsed[a], mgmt):
            errors.append(f"{a} {parsed[a].cidr} overlaps the management network {mgmt}")
    return errors


def plan_errors(
    hosts: Any,
    topology: str,
    link_pool: Any,
    link_prefix: Any,
    node_pool: Any,
    fabric_subnet: Any,
    ports: Mapping[str, Any] | None = None,
) -> list[str]:
    """Whether the whole address plan can be made (hosts, prefix, pool sizes), as messages.

    ``ports`` ({host: mesh_network_ports}): the cables to number; without it, one per pair. The cabling's
    own consistency is cabling.cables()'s to report, so only the numbering is checked here.
    """
    try:
        if topology == "switched":
            switched_addresses(hosts, fabric_subnet)
        else:
            names = check_hosts(hosts)
            net = parse_pool(link_pool)
            plen = parse_prefix(link_prefix, net)
            cable_list = cabling.full_mesh_cables(names) if ports is None else cabling.cables(names, ports)[0]
            cable_links(names, cable_list, net, plen)
            node_addresses(names, node_pool)
    except MeshAddressingError as exc:
        return [str(exc)]
    return []


def _overlap(a: IPNetwork, b: IPNetwork) -> bool:
    return a.first <= b.last and b.first <= a.last


def ip_link_interfaces(text: Any) -> dict[str, str]:
    """{ifname: mac} from `ip -j link show` (netlink, so right inside a network namespace too)."""
    try:
        links = json.loads(text) if isinstance(text, str) else text
    except ValueError as exc:
        raise MeshAddressingError(f"`ip -j link` output is not JSON: {str(text)[:80]!r}") from exc
    if not isinstance(links, list):
        raise MeshAddressingError(f"`ip -j link` output {str(text)[:80]!r} is not a list of links")
    return {
        str(link["ifname"]): str(link.get("address") or "").lower() for link in links if link.get("ifname")
    }


def resolve_port(
    spec: Any, interfaces: Mapping[str, str], label: str
) -> tuple[dict[str, str] | None, str | None]:
    """Turn 'ifname' or {name, macaddress} into {name, macaddress}; or return an error message."""
    if isinstance(spec, str):
        spec = {"name": spec}
    if not isinstance(spec, Mapping) or not (spec.get("name") or spec.get("macaddress")):
        return (
            None,
            f"{label} {spec!r} is neither an interface name nor a mapping with name and/or macaddress",
        )
    name = str(spec.get("name") or "")
    mac = str(spec.get("macaddress") or "").lower()
    if mac:
        owners = [ifname for ifname, ifmac in interfaces.items() if ifmac == mac]
        if not owners:
            return None, f"{label} macaddress {mac!r} is not on any interface of this host"
        if name and name not in owners:
            return (
                None,
                f"{label} macaddress {mac!r} belongs to {owners[0]!r}, not to the named interface {name!r}",
            )
        name = name or owners[0]
    elif name not in interfaces:
        known = ", ".join(sorted(interfaces)) or "none"
        return None, f"{label} interface {name!r} does not exist on this host (it has: {known})"
    return {"name": name, "macaddress": mac}, None


def port_errors(
    host: str,
    hosts: Sequence[str],
    topology: str,
    ports: Any,
    fabric_port: Any,
    interfaces: Mapping[str, str],
) -> list[str]:
    """Everything wrong with one host's port map, each message naming the bad value.

    A peer may be missing (no cable to it) or list several ports (one per cable); whether both ends list
    each cable is cabling.cables()'s check.
    """
    errors: list[str] = []
    if topology == "switched":
        if not fabric_port:
            return [f"{host}: mesh_network_fabric_port is not set (switched topology)"]
        _port, err = resolve_port(fabric_port, interfaces, f"{host}: mesh_network_fabric_port")
        return [err] if err else []
    if topology != "mesh":
        return [f"mesh_network_topology {topology!r} is neither 'mesh' nor 'switched'"]
    if not isinstance(ports, Mapping):
        return [f"{host}: mesh_network_ports {ports!r} is not a mapping of peer host to interface"]
    if not ports and len(hosts) > 1:
        errors.append(f"{host}: mesh_network_ports is empty: no cable joins {host} to any other node")
    used: dict[str, str] = {}
    for peer, value in ports.items():
        if peer == host:
            errors.append(f"{host}: mesh_network_ports names the host itself ({peer!r}) as a peer")
            continue
        if peer not in hosts:
            errors.append(f"{host}: mesh_network_ports names {peer!r}, which is not one of the mesh hosts")
            continue
        specs = cabling.port_specs(value)
        if not specs:
            errors.append(
                f"{host}: mesh_network_ports lists no port for peer {peer!r} (leave a peer out instead)"
            )
        for spec in specs:
            resolved, err = resolve_port(spec, interfaces, f"{host}: port for peer {peer!r}:")
            if err:
                errors.append(err)
                continue
            if resolved is None:  # resolve_port returns either a port or an error
                continue
            ifname = resolved["name"]
            if ifname in used:
                if used[ifname] == peer:
                    errors.append(f"{host}: interface {ifname!r} is listed twice for {peer!r}")
                else:
                    errors.append(
                        f"{host}: interface {ifname!r} is used for both {used[ifname]!r} and {peer!r}"
                    )
            used[ifname] = peer
    return errors


# --------------------------------------------------------------------------- per-host plan


def _resolved(spec: Any, interfaces: Mapping[str, str]) -> dict[str, str]:
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
) -> dict[str, Any]:
    """What one host needs: its node address, the interface sockets should bind, its cables and routes.

    ``ports`` is this host's mesh_network_ports, ``all_ports`` every host's (the cabling graph; this host's
    entry is replaced by ``ports``). The pools and names have no defaults here: the mesh_network role's
    defaults own them. ``layout`` (safety.anchored_layout: node addresses and cable subnets, the ones in use
    kept) replaces the positional numbering when given.

    Each link (one per cable of this host) carries ``routes``: the hosts whose node address is routed over
    it, along a shortest path (cabling.Graph.next_hop); a pair's further cables (rails) carry none.
    """
    names = check_hosts(hosts)
    if host not in names:
        raise MeshAddressingError(f"host {host!r} is not in the host list {names!r}")
    ifaces = dict(interfaces or {})
    errors = port_errors(host, names, topology, ports or {}, fabric_port, ifaces)
    if errors:
        raise MeshAddressingError("; ".join(errors))
    plan: dict[str, Any] = {"host": host, "index": names.index(host), "topology": topology}
    if topology == "switched":
        fabric = _resolved(fabric_port, ifaces)
        mine = switched_addresses(names, fabric_subnet)
        plan.update(
            node_address=mine[host]["address"],
            socket_ifname=fabric["name"],
            links=[],
            fabric={**fabric, **mine[host], "subnet": str(parse_pool(fabric_subnet, "subnet").cidr)},
            peers={h: mine[h]["address"] for h in names if h != host},
            hops={h: 1 for h in names if h != host},
            forwarding=[],
        )
        return plan
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
    by_cable = {(c["a"], c["b"], c["k"]): c for c in cable_list}
    routed: dict[str, list[str]] = {}
    for dst in names:
        step = graph.next_hop(host, dst)
        if step is not None:
            routed.setdefault(step, []).append(dst)
    links: list[dict[str, Any]] = []
    for link in all_links:
        if host not in (link["a"], link["b"]):
            continue
        k = int(link.get("k") or 0)
        cable = by_cable.get((link["a"], link["b"], k))
        if cable is None:
            continue  # a layout entry for a cable that is gone
        me_a = link["a"] == host
        peer = link["b"] if me_a else link["a"]
        port = _resolved(cable["a_port"] if me_a else cable["b_port"], ifaces)
        links.append(
            {
                "peer": peer,
                "k": k,
                "ifname": port["name"],
                "macaddress": port["macaddress"],
                "peer_port": cabling.port_name(cable["b_port"] if me_a else cable["a_port"]),
                "cable": cabling.cable_label(cable),
                "subnet": link["subnet"],
                "prefix": int(link["subnet"].split("/")[1]),
                "address": link["a_ip"] if me_a else link["b_ip"],
                "peer_address": link["b_ip"] if me_a else link["a_ip"],
                "peer_node_address": nodes[peer],
                # The peer's own node address first: read_netplan names a link's peer by its first route.
                "routes": sorted(routed.get(peer, []), key=lambda h: (h != peer, names.index(h)))
                if k == 0
                else [],
            }
        )
    links.sort(key=lambda entry: (names.index(entry["peer"]), entry["k"]))
    hops = {h: graph.hops(host, h) for h in names if h != host}
    plan.update(
        node_address=nodes[host],
        socket_ifname=nodeaddr_ifname,
        links=links,
        fabric=None,
        peers={h: nodes[h] for h in names if h != host},
        hops=hops,
        paths={h: graph.path(host, h) for h in names if h != host},
        # Packets between two other nodes pass here: the data ports forward them.
        forwarding=[entry["ifname"] for entry in links] if host in graph.transit() else [],
    )
    return plan


def netplan_document(plan: Mapping[str, Any], mtu: Any) -> dict[str, Any]:
    """The netplan v2 document for the data ports in ``plan`` (networkd renderer)."""
    errors = mtu_errors(mtu, "mtu")
    if errors:
        raise MeshAddressingError(errors[0])
    mtu_value = int(mtu)
    ethernets: dict[str, Any] = {}
    network: dict[str, Any] = {"version": 2, "ethernets": ethernets}

    def port(ifname: str, mac: str) -> dict[str, Any]:
        entry: dict[str, Any] = {"renderer": "networkd"}
        if mac:
            # Match by MAC so a renamed or re-enumerated NIC still gets its address.
            entry["match"] = {"macaddress": mac}
            entry["set-name"] = ifname
        entry.update({"mtu": mtu_value, "optional": True, "link-local": []})
        return entry

    if plan["topology"] == "switched":
        fabric = plan["fabric"]
        entry = port(fabric["name"], fabric["macaddress"])
        entry["addresses"] = [fabric["cidr"]]
        ethernets[fabric["name"]] = entry
        return {"network": network}

    own = plan["node_address"]
    peers = plan["peers"]
    for link in plan["links"]:
        entry = port(link["ifname"], link["macaddress"])
        entry["addresses"] = [f"{link['address']}/{link['prefix']}"]
        # Host routes to the node addresses behind this cable (the peer's, and those reached through it),
        # sourced from our node address, so sockets bound to the node address stay on the data cables.
        targets = link.get("routes", [link["peer"]])
        if targets:
            entry["routes"] = [
                {"to": f"{peers[h]}/32", "via": link["peer_address"], "from": own} for h in targets
            ]
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


# --------------------------------------------------------------------------- verify


def path_checks(plan: Mapping[str, Any], mtu: Any) -> list[dict[str, Any]]:
    """What verify (and, the direct ones, the apply's rollback probe) checks from one node.

    Mesh: each cable's far end (its link address, over that cable) and every other node's node address,
    pinged from our node address over the first cable of the route, with the hop count the cabling gives
    (``path``: the nodes on the way). Switched: each peer's fabric address. Every ping is don't-fragment at
    the MTU (payload = MTU - 28 bytes of IPv4 + ICMP headers).
    """
    size = ping_cmd.df_payload(mtu)
    checks: list[dict[str, Any]] = []
    if plan.get("topology") == "switched":
        fabric = plan["fabric"]
        for peer, address in plan["peers"].items():
            checks.append(
                {
                    "dst": peer,
                    "kind": "fabric",
                    "address": address,
                    "expected_dev": fabric["name"],
                    "size": size,
                    "source": "",
                    "hops": 1,
                }
            )
        return checks
    by_peer: dict[str, list[Mapping[str, Any]]] = {}
    for link in plan["links"]:
        by_peer.setdefault(link["peer"], []).append(link)
    first_cable = {}
    for link in plan["links"]:
        for target in link.get("routes", [link["peer"]]):
            first_cable[target] = link
    for dst in plan["peers"]:
        for link in by_peer.get(dst, []):
            checks.append(
                {
                    "dst": dst,
                    "kind": "link",
                    "address": link["peer_address"],
                    "expected_dev": link["ifname"],
                    "size": size,
                    "source": "",
                    "hops": 1,
                    "cable": link.get("cable", ""),
                }
            )
        via = first_cable.get(dst)
        path = list((plan.get("paths") or {}).get(dst) or [plan.get("host", ""), dst])
        checks.append(
            {
                "dst": dst,
                "kind": "node",
                "address": plan["peers"][dst],
                "expected_dev": via["ifname"] if via else "",
                "size": size,
                "source": plan["node_address"],
                "hops": int((plan.get("hops") or {}).get(dst) or 1),
                "path": path,
            }
        )
    return checks


def check_targets(extra: Sequence[str], plan: Mapping[str, Any], mtu: Any) -> list[dict[str, Any]]:
    """Targets for netplan_apply: extra addresses (plain ping) plus every direct path check (DF at the MTU).

    Node addresses further than one cable are left to verify: they answer only once every node on the way
    has applied its own plan, and the nodes apply at the same time.
    """
    targets: list[dict[str, Any]] = [
        {"address": str(a), "size": 0, "name": f"management path to {a}"} for a in extra if a
    ]
    what = {"link": "link address", "node": "node address", "fabric": "fabric address"}
    targets += [
        {
            "address": c["address"],
            "size": c["size"],
            # ports and peers, the way an operator reads a cabling problem
            "name": f"{plan.get('host', 'this node')} {c['expected_dev']} -> {c['dst']} {what[c['kind']]}",
        }
        for c in path_checks(plan, mtu)
        if c.get("hops", 1) == 1
    ]
    return targets


def expected_addresses(plan: Mapping[str, Any]) -> list[dict[str, str]]:
    """(ifname, address/len) pairs the plan configures, for netplan_apply's expect_addresses."""
    if plan.get("topology") == "switched":
        fabric = plan["fabric"]
        return [{"ifname": fabric["name"], "address": fabric["cidr"]}]
    out = [
        {"ifname": link["ifname"], "address": f"{link['address']}/{link['prefix']}"} for link in plan["links"]
    ]
    out.append({"ifname": plan["socket_ifname"], "address": f"{plan['node_address']}/32"})
    return out


def verify_results(
    checks: Sequence[Mapping[str, Any]], routes: Sequence[Any], pings: Sequence[Any]
) -> list[dict[str, Any]]:
    """Join path checks with `ip -j route get` and ping command results (registered loop results).

    A check with ``hops`` also compares the hops the replies crossed (from their TTL) with the cabling's.
    """
    out: list[dict[str, Any]] = []
    for check, route, ping in zip(checks, routes, pings, strict=True):
        dev = ""
        try:
            parsed = json.loads(route.get("stdout") or "[]")
            dev = str(parsed[0].get("dev", "")) if parsed else ""
        except (ValueError, AttributeError, IndexError):
            dev = ""
        ping_ok = ping.get("rc") == 0
        answer = ping_cmd.parse(ping.get("stdout") or "")
        hops = ping_cmd.hops_from_ttl(min(answer["ttls"])) if answer["ttls"] else None
        entry = {
            "dst": check["dst"],
            "kind": check["kind"],
            "address": check["address"],
            "expected_dev": check["expected_dev"],
            "dev": dev,
            "route_ok": dev == check["expected_dev"],
            "ping_ok": ping_ok,
            "rtt_ms": answer["avg_ms"],
        }
        for key in ("cable", "path"):
            if check.get(key):
                entry[key] = check[key]
        if check.get("hops"):
            entry["expected_hops"] = int(check["hops"])
            entry["hops"] = hops
        hops_ok = not check.get("hops") or hops is None or hops == int(check["hops"])
        entry["ok"] = entry["route_ok"] and ping_ok and hops_ok
        if not entry["ok"]:
            why = []
            if not entry["route_ok"]:
                why.append(f"route goes via {dev or '?'} instead of {check['expected_dev']}")
            if not ping_ok:
                err = (ping.get("stderr") or ping.get("stdout") or "").strip().splitlines()
                why.append(f"DF ping of {check['size']} B failed" + (f": {err[-1]}" if err else ""))
            if not hops_ok:
                why.append(
                    f"the replies crossed {hops} hop(s), the cabling's shortest path is {check['hops']}"
                )
            where = ""
            if check.get("cable"):
                where = f" (cable {check['cable']})"
            elif check.get("path") and len(check["path"]) > 2:
                where = f" (path {' -> '.join(check['path'])})"
            entry["error"] = (
                f"{check['dst']} {check['kind']} address {check['address']}{where}: " + "; ".join(why)
            )
        out.append(entry)
    return out


# --------------------------------------------------------------------------- report


def reachability_table(results: Mapping[str, Any], hosts: Sequence[str]) -> str:
    """All-pairs table from verify results ({src: [verify_results entries]}); one cell per node pair.

    A cell is ok only when every check for that pair passed; it shows the interface, RTT and, over more
    than one cable, the hop count of the node-address check (mesh) or fabric check (switched). Below the
    table: the count of good pairs, then every cable a link check failed on, named by both ends.
    """
    by_pair: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for src in hosts:
        for entry in results.get(src) or []:
            by_pair.setdefault((src, str(entry.get("dst"))), []).append(entry)
    cells: dict[tuple[str, str], str] = {}
    good = 0
    for pair, entries in by_pair.items():
        main = next((e for e in entries if e.get("kind") in ("node", "fabric")), entries[-1])
        bad = [e for e in entries if not e.get("ok")]
        if not bad:
            good += 1
            rtt = main.get("rtt_ms")
            dev = main.get("dev")
            cell = f"ok {dev} {rtt:.2f}ms" if isinstance(rtt, (int, float)) else f"ok {dev}"
            hops = main.get("hops") or main.get("expected_hops")
            cells[pair] = cell + (f" {hops} hops" if isinstance(hops, int) and hops > 1 else "")
        else:
            first = bad[0]
            dev = first.get("dev") or "?"
            want = first.get("expected_dev")
            cells[pair] = f"FAIL via {dev}" + (f" (want {want})" if want and want != dev else "")
    head = "from \\ to"
    width = max([len(head), *(len(h) for h in hosts), *(len(c) for c in cells.values())]) + 2
    lines = [head.ljust(width) + "".join(h.ljust(width) for h in hosts)]
    for src in hosts:
        row = [cells.get((src, dst), "-" if src == dst else "not checked") for dst in hosts]
        lines.append(src.ljust(width) + "".join(c.ljust(width) for c in row))
    lines.append(f"{good}/{len(by_pair)} node pairs OK")
    down: dict[str, list[str]] = {}
    for src in hosts:
        for entry in results.get(src) or []:
            if entry.get("kind") == "link" and entry.get("cable") and not entry.get("ok"):
                down.setdefault(str(entry["cable"]), []).append(src)
    for cable, ends in down.items():
        lines.append(f"cable {cable} FAILED (its far end does not answer from {', '.join(ends)})")
    return "\n".join(line.rstrip() for line in lines)
