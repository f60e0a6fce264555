# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A switched fabric's numbering, and what one node configures for it.

``rail_addresses`` numbers every node's NICs once for the cluster (cluster.py), by the node's position k in
the host list and the NIC's rail i, per scheme (fabric.py parses the settings):

- shared: every NIC in one subnet, NIC i of node k at host k * rails + i + 1 (one port per node: host k + 1,
  today's numbering); with several NICs each gets routing table base + i (its subnet's link route) and the
  source rule ``from <its address>/32 table base + i``, so a packet from a NIC's address leaves by that NIC;
- rails: one subnet per rail, node k at host k + 1 on every rail: distinct subnets route by themselves;
- leaf31: NIC i of node k gets /31 number k * rails + i of the leaf pool, the leaf switch the first address
  (the gateway), the node the second; its table routes the leaf routes via that gateway, with the source rule,
  and the main table routes them via rail 0's gateway (traffic without a bound source stays on the fabric).

``rail_nics`` adds each node's NIC on each rail (interface and MAC, from that node's own `ip -j link`) to the
numbering, so that every node's plan names the NIC behind each peer address (verify's ARP check compares the
MACs that answer with it). ``node_plan`` is one node's switched plan (its rails with resolved ports, the
peers' addresses and NICs, the ARP and reverse-path sysctls of a host with several NICs); ``ethernets``
renders its netplan entries; ``export`` is the ``mesh_network_fabric`` fact (one entry per rail) that verify
and NCCL read. ``changes_in_use`` names the addresses in use (read back from the nodes' netplan files) a plan
would move.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import addressing as ma
from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import cabling
from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh.data_ports import (
    ip_link_interfaces,
    port_entry,
    resolve_port,
)
from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh.fabric import Fabric, rail_name

try:
    from netaddr import IPAddress
except ImportError:  # addressing.parse_pool reports the missing library first
    IPAddress = None  # type: ignore[assignment,misc]

# The ARP and reverse-path settings of a host whose NICs share a network (ARP flux): answer ARP only for an
# address of the asking port (arp_ignore=1), name the outgoing port's own address in requests
# (arp_announce=2), and accept a reply on any port that routes back to its sender (rp_filter=2, loose).
ARP_SYSCTLS = (("arp_ignore", "1"), ("arp_announce", "2"), ("rp_filter", "2"))
# What mesh_network_fabric (the export) holds of each rail.
EXPORT_KEYS = ("rail", "name", "ifname", "address", "prefix", "subnet", "table", "gateway")


def rail_addresses(names: Sequence[str], fabric: Fabric) -> dict[str, list[dict[str, Any]]]:
    """{host: one entry per rail: {rail, name, address, prefix, subnet, table, gateway}} for every node."""
    rails = fabric.rails
    out: dict[str, list[dict[str, Any]]] = {}
    for k, host in enumerate(names):
        entries = []
        for i in range(rails):
            table = None if fabric.table_base is None else fabric.table_base + i
            gateway = None
            if fabric.scheme == "shared":
                net = fabric.subnets[0]
                address = ma.nth_host(net, k * rails + i, "mesh_network_fabric_subnet")
            elif fabric.scheme == "rails":
                net = fabric.subnets[i]
                address = ma.nth_host(net, k, f"{rail_name(i)} subnet")
            else:
                net = ma.nth_subnet(fabric.subnets[0], 31, k * rails + i)
                gateway, address = str(IPAddress(net.first)), IPAddress(net.first + 1)
            entries.append(
                {
                    "rail": i,
                    "name": rail_name(i),
                    "address": str(address),
                    "prefix": net.prefixlen,
                    "subnet": str(net.cidr),
                    "table": table,
                    "gateway": gateway,
                }
            )
        out[host] = entries
    return out


def rail_nics(
    table: Mapping[str, Sequence[Mapping[str, Any]]],
    ports: Mapping[str, Sequence[Any]],
    links: Mapping[str, Any],
) -> dict[str, list[dict[str, Any]]]:
    """``table`` (rail_addresses) with each NIC's ``ifname`` and ``mac`` added: the port of the node's list
    (``ports``, {host: ports in rail order}) resolved against the node's `ip -j link` (``links``, {host: its
    output}). What a node did not report (outside the play) or a port that does not resolve is None: the
    node's own check names the port."""
    out: dict[str, list[dict[str, Any]]] = {}
    for host, entries in table.items():
        try:
            interfaces = ip_link_interfaces(links[host]) if links.get(host) else {}
        except ma.MeshAddressingError:
            interfaces = {}
        specs = list(ports.get(host) or [])
        out[host] = []
        for i, entry in enumerate(entries):
            spec = specs[i] if i < len(specs) else None
            port = resolve_port(spec, interfaces, "port")[0] if interfaces and spec else None
            name = port["name"] if port else (cabling.port_name(spec) if spec else None)
            out[host].append(
                {**entry, "ifname": name or None, "mac": interfaces.get(port["name"]) if port else None}
            )
    return out


def node_plan(
    host: str,
    names: Sequence[str],
    rails: Mapping[str, Sequence[Mapping[str, Any]]],
    ports: Sequence[Mapping[str, str]],
    leaf_routes: Sequence[str] = (),
) -> dict[str, Any]:
    """One node's switched plan: ``rails`` is every node's rail_addresses, ``ports`` this node's resolved
    ports in rail order ({name, macaddress})."""
    mine = [
        {**entry, "ifname": port["name"], "macaddress": port["macaddress"]}
        for entry, port in zip(rails[host], ports, strict=True)
    ]
    first = mine[0]
    peers = [h for h in names if h != host]
    plan: dict[str, Any] = {
        "host": host,
        "index": list(names).index(host),
        "topology": "switched",
        "node_address": first["address"],
        # NCCL takes a list of interfaces; gloo binds the first
        "socket_ifname": ",".join(r["ifname"] for r in mine),
        "links": [],
        # rail 0 as one fabric port (what the single-port plan always held; verify reads it)
        "fabric": {
            "name": first["ifname"],
            "macaddress": first["macaddress"],
            "address": first["address"],
            "prefix": first["prefix"],
            "cidr": f"{first['address']}/{first['prefix']}",
            "subnet": first["subnet"],
        },
        "rails": mine,
        "leaf_routes": list(leaf_routes) if any(r["gateway"] for r in mine) else [],
        "peers": {h: rails[h][0]["address"] for h in peers},
        "hops": dict.fromkeys(peers, 1),
        "forwarding": [],
        "sysctl": sysctls(mine),
        # no ring here: no transit rules (mesh/backup.py), no drop-in to write
        "networkd_dropin": {"path": "", "content": ""},
    }
    if len(mine) > 1:
        plan["rail_peers"] = {h: [r["address"] for r in rails[h]] for h in peers}
        # each peer's NIC on every rail (interface and MAC, None where unknown): verify's ARP check
        plan["rail_peer_nics"] = {
            h: [{"ifname": r.get("ifname"), "mac": r.get("mac")} for r in rails[h]] for h in peers
        }
    return plan


def sysctls(rails: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """The ARP and reverse-path settings of every fabric port, where a host has several (none for one)."""
    if len(rails) < 2:
        return []
    return [
        {"name": f"net.ipv4.conf.{r['ifname']}.{key}", "value": value}
        for r in rails
        for key, value in ARP_SYSCTLS
    ]


def ethernets(plan: Mapping[str, Any], mtu: int) -> dict[str, Any]:
    """The netplan ``ethernets`` of a switched plan: each rail's port, address, table and source rule."""
    out: dict[str, Any] = {}
    leaf_routes = list(plan.get("leaf_routes") or [])
    for rail in plan["rails"]:
        entry = port_entry(rail["ifname"], rail["macaddress"], mtu)
        entry["addresses"] = [f"{rail['address']}/{rail['prefix']}"]
        routes: list[dict[str, Any]] = []
        table = rail["table"]
        if table is not None:
            routes.append({"to": rail["subnet"], "scope": "link", "table": table})
            if rail["gateway"]:
                routes += [{"to": to, "via": rail["gateway"], "table": table} for to in leaf_routes]
            # the priority is the table's: before main's rule (32766), one per NIC
            entry["routing-policy"] = [{"from": f"{rail['address']}/32", "table": table, "priority": table}]
        if rail["gateway"] and rail["rail"] == 0:
            routes += [{"to": to, "via": rail["gateway"]} for to in leaf_routes]
        if routes:
            entry["routes"] = routes
        out[rail["ifname"]] = entry
    return out


def changes_in_use(
    names: Sequence[str],
    rails: Mapping[str, Sequence[Mapping[str, Any]]],
    ports: Mapping[str, Sequence[Any]],
    files: Mapping[str, Any],
) -> tuple[int, list[str]]:
    """(ports that keep their address in use, the fabric addresses a plan would move): each port of a node
    whose netplan file (the role's, read back: ``files``, {host: the document or None}) gives it another
    address than ``rails`` does, as ``gpu02 rail1 ens12np0 192.168.200.6/24 -> 192.168.193.2/24``. A new
    scheme, subnet or host order does that; the role refuses it unless renumbering is asked for."""
    kept = 0
    changes = []
    for host in names:
        doc = files.get(host)
        network = doc.get("network") if isinstance(doc, Mapping) else None
        ethernets = network.get("ethernets") if isinstance(network, Mapping) else None
        if not isinstance(ethernets, Mapping):
            continue
        for entry, spec in zip(rails.get(host) or [], ports.get(host) or [], strict=False):
            name = cabling.port_name(spec)
            mac = str(spec.get("macaddress") or "").lower() if isinstance(spec, Mapping) else ""
            found = ethernets.get(name) if name else None
            if found is None and mac:
                found = next(
                    (
                        e
                        for e in ethernets.values()
                        if isinstance(e, Mapping)
                        and str((e.get("match") or {}).get("macaddress")).lower() == mac
                    ),
                    None,
                )
            held = [str(a) for a in found.get("addresses") or []] if isinstance(found, Mapping) else []
            wanted = f"{entry['address']}/{entry['prefix']}"
            if held and wanted not in held:
                changes.append(
                    f"{host} {entry['name']} {cabling.port_label(spec)} {', '.join(held)} -> {wanted}"
                )
            kept += wanted in held
    return kept, changes


def export(plan: Mapping[str, Any]) -> list[dict[str, Any]]:
    """mesh_network_fabric: one entry per rail ({rail, name, ifname, address, prefix, subnet, table,
    gateway}); empty for a mesh."""
    return [{key: rail[key] for key in EXPORT_KEYS} for rail in plan.get("rails") or []]
