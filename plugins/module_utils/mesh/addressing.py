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


def mesh_links(hosts: Any, pool: Any, prefix: Any) -> list[dict[str, str]]:
    """One entry per unordered host pair: {a, b, subnet, a_ip, b_ip}.

    ``a`` is the host that comes first in ``hosts``. Entries are ordered by pair index.
    """
    names = check_hosts(hosts)
    net = parse_pool(pool)
    plen = parse_prefix(prefix, net)
    needed = len(names) * (len(names) - 1) // 2
    capacity = net.size >> (32 - plen)
    if needed > capacity:
        raise MeshAddressingError(
            f"pool {net.cidr} is too small: it holds {capacity} /{plen} subnets, "
            f"{len(names)} hosts need {needed} (one per pair)"
        )
    links: list[dict[str, str]] = []
    for j in range(len(names)):
        for i in range(j):
            subnet = _nth_subnet(net, plen, pair_index(i, j))
            a_ip, b_ip = _link_ends(subnet)
            links.append(
                {"a": names[i], "b": names[j], "subnet": str(subnet), "a_ip": str(a_ip), "b_ip": str(b_ip)}
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
) -> list[str]:
    """Whether the whole address plan can be made (hosts, prefix, pool sizes), as messages."""
    try:
        if topology == "switched":
            switched_addresses(hosts, fabric_subnet)
        else:
            mesh_links(hosts, link_pool, link_prefix)
            node_addresses(hosts, node_pool)
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
    """Everything wrong with one host's port map, each message naming the bad value."""
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
    peers = [h for h in hosts if h != host]
    for peer in peers:
        if peer not in ports:
            errors.append(
                f"{host}: mesh_network_ports has no port for peer {peer!r}: the mesh topology expects a "
                f"full mesh "
                "(a direct link from every node to every other)"
            )
    used: dict[str, str] = {}
    for peer, spec in ports.items():
        if peer == host:
            errors.append(f"{host}: mesh_network_ports names the host itself ({peer!r}) as a peer")
            continue
        if peer not in hosts:
            errors.append(f"{host}: mesh_network_ports names {peer!r}, which is not one of the mesh hosts")
            continue
        resolved, err = resolve_port(spec, interfaces, f"{host}: port for peer {peer!r}:")
        if err:
            errors.append(err)
            continue
        if resolved is None:  # resolve_port returns either a port or an error
            continue
        ifname = resolved["name"]
        if ifname in used:
            errors.append(f"{host}: interface {ifname!r} is used for both {used[ifname]!r} and {peer!r}")
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
    fabric_port: Any = None,
    interfaces: Mapping[str, str] | None = None,
    link_pool: str,
    link_prefix: Any,
    node_pool: str,
    fabric_subnet: str,
    nodeaddr_ifname: str,
    layout: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """What one host needs: its node address, the interface sockets should bind, its links.

    The pools and names have no defaults here: the mesh_network role's defaults own them. ``layout``
    (mesh_safety.anchored_layout: node addresses and links, the ones in use kept) replaces the
    positional numbering when given.
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
        )
        return plan
    nodes = dict(layout["nodes"]) if layout else node_addresses(names, node_pool)
    all_links = list(layout["links"]) if layout else mesh_links(names, link_pool, link_prefix)
    links: list[dict[str, Any]] = []
    for link in all_links:
        if host not in (link["a"], link["b"]):
            continue
        me_a = link["a"] == host
        peer = link["b"] if me_a else link["a"]
        port = _resolved((ports or {})[peer], ifaces)
        links.append(
            {
                "peer": peer,
                "ifname": port["name"],
                "macaddress": port["macaddress"],
                "subnet": link["subnet"],
                "prefix": int(link["subnet"].split("/")[1]),
                "address": link["a_ip"] if me_a else link["b_ip"],
                "peer_address": link["b_ip"] if me_a else link["a_ip"],
                "peer_node_address": nodes[peer],
            }
        )
    links.sort(key=lambda entry: names.index(entry["peer"]))
    plan.update(
        node_address=nodes[host],
        socket_ifname=nodeaddr_ifname,
        links=links,
        fabric=None,
        peers={h: nodes[h] for h in names if h != host},
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
    for link in plan["links"]:
        entry = port(link["ifname"], link["macaddress"])
        entry["addresses"] = [f"{link['address']}/{link['prefix']}"]
        # Host route to the peer's node address over the direct link, sourced from our
        # node address, so sockets bound to the node address stay on the mesh.
        entry["routes"] = [
            {"to": f"{link['peer_node_address']}/32", "via": link["peer_address"], "from": own}
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
    """What verify (and the apply's rollback probe) checks from one node.

    Mesh: each peer's link address and node address, both expected over the direct link;
    the node address is pinged from our node address. Switched: each peer's fabric address.
    Every ping is don't-fragment at the MTU (payload = MTU - 28 bytes of IPv4 + ICMP headers).
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
                }
            )
        return checks
    for link in plan["links"]:
        checks.append(
            {
                "dst": link["peer"],
                "kind": "link",
                "address": link["peer_address"],
                "expected_dev": link["ifname"],
                "size": size,
                "source": "",
            }
        )
        checks.append(
            {
                "dst": link["peer"],
                "kind": "node",
                "address": link["peer_node_address"],
                "expected_dev": link["ifname"],
                "size": size,
                "source": plan["node_address"],
            }
        )
    return checks


def check_targets(extra: Sequence[str], plan: Mapping[str, Any], mtu: Any) -> list[dict[str, Any]]:
    """Targets for netplan_apply: extra addresses (plain ping) plus every path check (DF at the MTU)."""
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
    """Join path checks with `ip -j route get` and ping command results (registered loop results)."""
    out: list[dict[str, Any]] = []
    for check, route, ping in zip(checks, routes, pings, strict=True):
        dev = ""
        try:
            parsed = json.loads(route.get("stdout") or "[]")
            dev = str(parsed[0].get("dev", "")) if parsed else ""
        except (ValueError, AttributeError, IndexError):
            dev = ""
        ping_ok = ping.get("rc") == 0
        entry = {
            "dst": check["dst"],
            "kind": check["kind"],
            "address": check["address"],
            "expected_dev": check["expected_dev"],
            "dev": dev,
            "route_ok": dev == check["expected_dev"],
            "ping_ok": ping_ok,
            "rtt_ms": ping_cmd.parse(ping.get("stdout") or "")["avg_ms"],
        }
        entry["ok"] = entry["route_ok"] and ping_ok
        if not entry["ok"]:
            why = []
            if not entry["route_ok"]:
                why.append(f"route goes via {dev or '?'} instead of {check['expected_dev']}")
            if not ping_ok:
                err = (ping.get("stderr") or ping.get("stdout") or "").strip().splitlines()
                why.append(f"DF ping of {check['size']} B failed" + (f": {err[-1]}" if err else ""))
            entry["error"] = f"{check['dst']} {check['kind']} address {check['address']}: " + "; ".join(why)
        out.append(entry)
    return out


# --------------------------------------------------------------------------- report


def reachability_table(results: Mapping[str, Any], hosts: Sequence[str]) -> str:
    """All-pairs table from verify results ({src: [verify_results entries]}); one cell per node pair.

    A cell is ok only when every check for that pair passed; it shows the interface and RTT of
    the node-address check (mesh) or fabric check (switched).
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
            cells[pair] = f"ok {dev} {rtt:.2f}ms" if isinstance(rtt, (int, float)) else f"ok {dev}"
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
    return "\n".join(line.rstrip() for line in lines)
