# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rails in the NCCL path audit (``nccl_path``): which rail each channel's NIC is on, and the channels whose
two ends are on different rails.

A node's rails come from mesh_network's ``mesh_network_fabric`` (rail ``name`` and ``ifname``; the RDMA
devices whose netdev is that interface are on the same rail), else from its NCCL environment, which nccl_env
writes in rail order: NCCL_IB_HCA's entries, or NCCL_SOCKET_IFNAME's exact names on TCP (``=data0,data1``),
rail *i* being entry *i*. One entry or none: no rails. A channel is logged at both ends, ``[send]`` on the
source rank's node and ``[receive]`` on the destination's, each naming its own NIC; the two lines of a channel
pair by channel number and ranks. NCCL_CROSS_NIC=0 (rail-optimized, nccl_env's choice with 2+ rails) should
keep every channel on one rail: a crossing channel fails the verdict there and is a note elsewhere (NCCL's
default, 2, allows it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.nccl import hca


def rail_map(
    fabric: Sequence[Mapping[str, Any]], ports: Sequence[Mapping[str, Any]], env: Mapping[str, Any]
) -> dict[str, str]:
    """One node's NIC names (interface, RDMA device, ``device:port``) -> rail name."""
    out: dict[str, str] = {}
    for rail in fabric or []:
        name = str(rail.get("name") or f"rail{rail.get('rail')}")
        ifname = str(rail.get("ifname") or "")
        out[ifname] = name
        for port in ports or []:
            if port.get("netdev") == ifname:
                out[str(port.get("device"))] = name
                out[f"{port.get('device')}:{port.get('port')}"] = name
    if out:
        return out
    exclude, _exact, listed = hca.entries(env.get("NCCL_IB_HCA"))
    if len(listed) > 1 and not exclude and str(env.get("NCCL_IB_DISABLE", "")) != "1":
        for i, entry in enumerate(listed):
            out[entry.device] = f"rail{i}"
            if entry.port:
                out[f"{entry.device}:{entry.port}"] = f"rail{i}"
        return out
    sockets = str(env.get("NCCL_SOCKET_IFNAME") or "")
    names = sockets[1:].split(",") if sockets.startswith("=") else []
    return {name: f"rail{i}" for i, name in enumerate(names)} if len(names) > 1 else {}


def judge(
    channels: Sequence[Any],
    rails: Mapping[str, Mapping[str, str]],
    optimized: Mapping[str, bool],
    unpaired: set[str],
) -> tuple[list[str], list[str]]:
    """Set each NET channel's ``rail`` (and, paired with its other end, ``peer_rail`` and ``cross_rail``);
    (problems, notes) for the channels that cross rails. Nodes in UNPAIRED (split communicators, whose channel
    lines do not say their communicator) are given rails but not paired."""
    if not rails:
        return [], []
    for c in channels:
        if c.transport.startswith("NET/") and c.nic and "," not in c.nic:
            c.rail = (rails.get(c.node) or {}).get(c.nic, "")
    ends: dict[tuple[int, int, int, str], list[Any]] = {}
    for c in channels:
        if c.rail and c.direction and c.node not in unpaired:
            ends.setdefault((c.channel, c.src, c.dst, c.direction), []).append(c)
    crossed: dict[tuple[str, str, str, str, str], list[int]] = {}
    for (channel, src, dst, direction), senders in ends.items():
        receivers = ends.get((channel, src, dst, "receive")) or []
        here, there = {c.rail for c in senders}, {c.rail for c in receivers}
        if direction != "send" or len(here) != 1 or len(there) != 1:
            continue  # not both ends seen once each: nothing to compare
        for mine, theirs in ((senders, there), (receivers, here)):
            for c in mine:
                c.peer_rail = next(iter(theirs))
                c.cross_rail = c.rail != c.peer_rail
        sender = senders[0]
        if sender.cross_rail:
            key = (sender.node, sender.peer_node, sender.nic, sender.rail, sender.peer_rail)
            crossed.setdefault(key, []).append(channel)
    problems: list[str] = []
    notes: list[str] = []
    for (node, peer, nic, rail, peer_rail), numbers in sorted(crossed.items()):
        which = ", ".join(f"{n:02d}" for n in sorted(set(numbers)))
        count = f"{len(numbers)} channel{'s' if len(numbers) > 1 else ''}"
        text = (
            f"{node}: {count} to {peer} cross rails, leaving by {nic} on {rail} and arriving on {peer_rail}"
            f" at {peer} (channel {which})"
        )
        if optimized.get(node):
            problems.append(f"{text}, though NCCL_CROSS_NIC=0 asks NCCL to keep a channel on its rail")
        else:
            notes.append(f"{text}; NCCL_CROSS_NIC is not 0 there, which allows it")
    return problems, notes


def label(channel: Mapping[str, Any]) -> str:
    """A channel's rail for the report: ``rail0``, ``rail1 -> rail0`` when it crosses, ``-`` when unknown."""
    if not channel.get("rail"):
        return "-"
    return f"{channel['rail']} -> {channel['peer_rail']}" if channel.get("cross_rail") else channel["rail"]
