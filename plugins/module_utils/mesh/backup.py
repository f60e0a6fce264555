# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Backup routes around a cable that lost carrier, in a full mesh of 3+ nodes.

Every node address gets a second host route, with a higher metric (METRIC), over another neighbour's cable
(cabling.Graph.backup_hops); that neighbour forwards it over its own direct cable. While a cable has carrier
the kernel uses the direct route; when it loses carrier, ``ignore_routes_with_linkdown`` makes the kernel
skip the routes over it at once (networkd then drops them), so the backup carries the traffic, and with
carrier back the direct route wins again. Transports between node addresses (gloo, NCCL's sockets) carry on,
slower; transports bound to one cable (RDMA QPs, the Mesh plugin) stop, and the watch names the cable.

Routes that leave by another port than they came in are asymmetric: the data ports get loose reverse-path
filtering (``rp_filter=2``), and forwarding, on every node of such a mesh.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

# The metric of a backup route (direct routes have none: the kernel's 0).
METRIC = 100


def by_neighbour(backup_hops: Mapping[str, str], index: Mapping[str, int]) -> dict[str, list[str]]:
    """{neighbour: the destinations whose backup route goes over it}, each list in host order."""
    out: dict[str, list[str]] = {}
    for dst, step in backup_hops.items():
        out.setdefault(step, []).append(dst)
    return {step: sorted(dsts, key=index.__getitem__) for step, dsts in out.items()}


def sysctl(ifnames: Sequence[str], forwarding: bool, backups: bool) -> list[dict[str, str]]:
    """The data ports' sysctls: forwarding where others' packets cross the node; with backups also loose
    reverse-path filtering and routes skipped while their port has no carrier."""
    settings: list[tuple[str, str]] = []
    if forwarding or backups:
        settings.append(("forwarding", "1"))
    if backups:
        settings += [("rp_filter", "2"), ("ignore_routes_with_linkdown", "1")]
    return [
        {"name": f"net.ipv4.conf.{ifname}.{key}", "value": value}
        for ifname in ifnames
        for key, value in settings
    ]


def link_routes(link: Mapping[str, Any], own: str, peers: Mapping[str, str]) -> list[dict[str, Any]]:
    """A cable's netplan routes, via the peer's address on it: the node addresses routed over it (the peer's
    own first), then the backups it carries (METRIC)."""
    via = link["peer_address"]
    out: list[dict[str, Any]] = [
        {"to": f"{peers[h]}/32", "via": via, "from": own} for h in link.get("routes", [link["peer"]])
    ]
    out += [
        {"to": f"{peers[h]}/32", "via": via, "from": own, "metric": METRIC} for h in link.get("backups") or []
    ]
    return out
