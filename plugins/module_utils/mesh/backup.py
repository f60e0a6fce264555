# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Backup routes around a cable that lost carrier, in a full mesh of 3+ nodes and in a ring.

Every node address gets a second host route, with a higher metric (METRIC), over another neighbour's cable
(cabling.Graph.backup_hops). In a full mesh that neighbour forwards it over its own direct cable. While a
cable has carrier the kernel uses the direct route; when it loses carrier, ``ignore_routes_with_linkdown``
makes the kernel skip the routes over it at once (networkd then drops them), so the backup carries the
traffic, and with carrier back the direct route wins again. Transports between node addresses (gloo, NCCL's
sockets) carry on, slower; transports bound to one cable (RDMA QPs, the Mesh plugin) stop, and the watch names
the cable.

In a ring the backup goes the long way round, and each node on the way must carry it on, not send it back
along its own shortest route: what arrives from one neighbour is looked up in a table of its own
(``ring_tables``, a rule by incoming port: ``transit_rules``) that routes the node addresses on to the other
neighbour, or, while that cable is down, back (METRIC: ``transit_routes``). So a packet whose route crosses
the lost cable further on is turned round at the cable and goes the other way, past its sender
(``accept_local``). netplan has no incoming-interface rules (canonical/netplan#543 is open): they are a
systemd-networkd drop-in of the node-address bridge's .network file (``dropin``); the tables' routes are in
the netplan file, on the ports they leave by.

Routes that leave by another port than they came in are asymmetric: the data ports get loose reverse-path
filtering (``rp_filter=2``), and forwarding, on every node of such a mesh.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

try:
    from netaddr import IPNetwork, spanning_cidr
except ImportError:  # pragma: no cover - the role installs netaddr; the module reports the import error
    IPNetwork = spanning_cidr = None  # type: ignore[assignment,misc]

# The metric of a backup route (direct routes have none: the kernel's 0), and of a ring's "send it back".
METRIC = 100
# A ring node's transit tables and their rules' priorities: what arrives from its first neighbour (host order)
# is looked up in RING_TABLE, from its second in RING_TABLE + 1; before the main table (32766), after the
# local one (0), so a packet for this node is delivered first.
RING_TABLE = 210
# Where networkd reads drop-ins of the .network files netplan generates (10-netplan-<interface>.network).
NETWORKD_DROPIN_DIR = "/etc/systemd/network"
DROPIN_NAME = "60-rdmaops-ring-transit.conf"


def dropin_path(nodeaddr_ifname: str) -> str:
    """The networkd drop-in with a ring node's transit rules, beside the node-address bridge's .network file
    (the bridge is always configured: ignore-carrier)."""
    return f"{NETWORKD_DROPIN_DIR}/10-netplan-{nodeaddr_ifname}.network.d/{DROPIN_NAME}"


def transit_prefixes(nodes: Mapping[str, str], subnets: Sequence[str]) -> list[str]:
    """What a ring's transit tables route: the smallest prefix that holds every node address, or each
    node address alone where that prefix would also hold a cable's subnet (addresses given by a layout)."""
    span = spanning_cidr(list(nodes.values()))
    if not any(span.first <= IPNetwork(s).last and IPNetwork(s).first <= span.last for s in subnets):
        return [str(span)]
    return [f"{address}/32" for address in nodes.values()]


def ring_tables(neighbours: Sequence[str]) -> dict[str, int]:
    """{neighbour: the table of what arrives from it} for a ring node's two neighbours in host order."""
    return {peer: RING_TABLE + i for i, peer in enumerate(neighbours)}


def transit_routes(peer: str, tables: Mapping[str, int], prefixes: Sequence[str]) -> list[dict[str, Any]]:
    """The transit-table routes over the cable to ``peer`` (cable 0 of the pair): what arrives from the
    other neighbour goes on over it; what arrives from ``peer`` itself comes back over it only while the
    way on is down (METRIC)."""
    out: list[dict[str, Any]] = []
    for came_from, table in tables.items():
        extra = {} if came_from != peer else {"metric": METRIC}
        out += [{"to": prefix, "table": table, **extra} for prefix in prefixes]
    return out


def transit_rules(links: Sequence[Mapping[str, Any]], tables: Mapping[str, int]) -> list[dict[str, Any]]:
    """One rule per data port: what arrives on it from neighbour ``peer`` is looked up in that one's table."""
    return [
        {"iif": link["ifname"], "table": tables[link["peer"]], "priority": tables[link["peer"]]}
        for link in links
        if link["peer"] in tables
    ]


def dropin(host: str, rules: Sequence[Mapping[str, Any]]) -> str:
    """The networkd drop-in text with a ring node's transit rules; '' (no file) without any."""
    if not rules:
        return ""
    lines = [
        f"# Managed by rdmaops.cluster.mesh_network: {host}'s ring transit rules (netplan has no",
        "# incoming-interface rules). What arrives from one neighbour goes on to the other; the tables'",
        "# routes are in the role's netplan file.",
    ]
    for rule in rules:
        lines += [
            "",
            "[RoutingPolicyRule]",
            f"IncomingInterface={rule['iif']}",
            f"Table={rule['table']}",
            f"Priority={rule['priority']}",
        ]
    return "\n".join(lines) + "\n"


def by_neighbour(backup_hops: Mapping[str, str], index: Mapping[str, int]) -> dict[str, list[str]]:
    """{neighbour: the destinations whose backup route goes over it}, each list in host order."""
    out: dict[str, list[str]] = {}
    for dst, step in backup_hops.items():
        out.setdefault(step, []).append(dst)
    return {step: sorted(dsts, key=index.__getitem__) for step, dsts in out.items()}


def sysctl(ifnames: Sequence[str], forwarding: bool, kind: str) -> list[dict[str, str]]:
    """The data ports' sysctls: forwarding where others' packets cross the node; with backups (``kind``) also
    loose reverse-path filtering and routes skipped while their port has no carrier; in a ring also packets
    with this node's own source accepted (turned round at a lost cable, they come back past their sender)."""
    settings: list[tuple[str, str]] = []
    if forwarding or kind:
        settings.append(("forwarding", "1"))
    if kind:
        settings += [("rp_filter", "2"), ("ignore_routes_with_linkdown", "1")]
    if kind == "ring":
        settings.append(("accept_local", "1"))
    return [
        {"name": f"net.ipv4.conf.{ifname}.{key}", "value": value}
        for ifname in ifnames
        for key, value in settings
    ]


def link_routes(link: Mapping[str, Any], own: str, peers: Mapping[str, str]) -> list[dict[str, Any]]:
    """A cable's netplan routes, via the peer's address on it: the node addresses routed over it (the peer's
    own first), then the backups it carries (METRIC), then a ring's transit-table routes."""
    via = link["peer_address"]
    out: list[dict[str, Any]] = [
        {"to": f"{peers[h]}/32", "via": via, "from": own} for h in link.get("routes", [link["peer"]])
    ]
    out += [
        {"to": f"{peers[h]}/32", "via": via, "from": own, "metric": METRIC} for h in link.get("backups") or []
    ]
    out += [
        {"to": r["to"], "via": via, **{k: v for k, v in r.items() if k != "to"}}
        for r in link.get("transit_routes") or []
    ]
    return out
