# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The path NCCL took, read from its ``NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET`` lines, and a verdict.

``parse(text)`` reads one node's log (torchrun's combined output: every local rank's NCCL lines, among other
lines) into its ranks, the network NCCL used and its devices, the net plugin it was told to load and whether
it did, the connections the Mesh plugin reports (``connect:``/``accept:`` with the peer and the local NIC),
the RoCE GID of IB connections, and every channel: ``Channel 00/0 : 3[3] -> 0[0] [receive] via NET/Mesh/0``.

``verdict(logs, expect)`` maps each channel of every node to its transport, NIC/GID and peer node, and fails
when traffic to a peer leaves by a port that does not face it, when it falls back to the Socket transport (or
the Mesh plugin's TCP backend) where RDMA was configured, or when a net plugin was configured and not loaded.
On a fabric of several rails (mesh_network's ``mesh_network_fabric``, or the HCAs/interfaces the NCCL
environment lists in rail order) each channel's NIC is on a rail; a channel whose two ends (the send line on
one node, the receive line on the other) are on different rails crosses rails, which fails the verdict where
NCCL_CROSS_NIC=0 asked for rail-optimized channels and is a note otherwise.
Formats: NCCL 2.28 (src/init.cc, src/transport/net.cc, net_ib.cc, net_socket.cc) and the Mesh plugin
(files/plugin_src); tests/unit/fixtures/nccl holds real logs. Pure Python.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.verify import nccl_rails

_LINE = re.compile(r"^(?P<host>[^\s:]+):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>\d+)\] NCCL INFO (?P<msg>.*)$")
_INIT = re.compile(
    r"ncclCommInitRank\w* comm (?P<comm>0x[0-9a-f]+) rank (?P<rank>\d+) nranks (?P<nranks>\d+) "
    r".*?commId (?P<id>0x[0-9a-f]+)"
)
# Communicators split from another (torch's new_group / device meshes: HSDP's shard and replicate groups,
# src/init.cc ncclCommSplit) number their ranks from 0 again.
_SPLIT = re.compile(r"ncclCommSplit comm (?P<comm>0x[0-9a-f]+) rank (?P<rank>\d+) nranks (?P<nranks>\d+) ")
_CHANNEL = re.compile(
    r"^Channel (?P<ch>\d+)/(?P<conn>\d+) : (?P<src>\d+)\[\d+\] -> (?P<dst>\d+)\[\d+\]"
    r"(?: \[(?P<dir>send|receive)\])? via (?P<via>\S+)"
)
_NET_VIA = re.compile(r"^NET/(?P<net>[^/]+)/(?P<dev>\d+)(?:\((?P<proxy>\d+)\))?(?P<rest>.*)$")
_DEVICE = re.compile(
    r"\[(?P<i>\d+)\](?P<name>[^\s:\[\]]+)(?::(?P<port>\d+)/(?P<link>\w+)|:(?P<addr>[^<\s]+)<\d+>)?"
)
_MESH_CONN = re.compile(
    r"^NET/Mesh : (?P<kind>connect|accept): peer (?P<peer>[^,]+), NIC (?P<nic>\S+) \((?P<addr>[^)]*)\), "
    r"GID (?P<gid>[^,]+), subnet (?P<subnet>[^,]+)"
)
_IB_QP = re.compile(
    r"^NET/IB: NCCL (?:Merged)?Dev (?P<dev>\d+) IbDev (?P<ibdev>\d+) Port \d+ qpn \d+ mtu \d+ "
    r"GID (?P<gid>-?\d+)"
)


@dataclass
class Channel:
    node: str
    rank: int
    channel: int
    src: int
    dst: int
    direction: str  # send, receive, or "" (peer-to-peer and shared memory say neither)
    via: str
    transport: str = ""  # P2P, SHM, NET/<network>, ...
    net_dev: int | None = None
    nic: str = ""
    gid: str = ""
    peer_rank: int = -1
    peer_node: str = ""
    rail: str = ""  # the rail of this end's NIC (nccl_rails), empty when the fabric has no rails
    peer_rail: str = ""  # the rail of the other end's NIC, when its line was found
    cross_rail: bool = False


@dataclass
class NodeLog:
    node: str
    version: str = ""
    ranks: dict[int, int] = field(default_factory=dict)  # rank -> pid
    split_pids: set[int] = field(default_factory=set)  # processes that also joined split communicators
    nranks: int = 0
    plugin_env: str = ""  # NCCL_NET_PLUGIN as NCCL read it
    plugin_loaded: str = ""  # the name NCCL loaded ("Mesh"), empty if none
    plugin_missing: list[str] = field(default_factory=list)
    networks: set[str] = field(default_factory=set)  # "Using network X"
    failed_networks: set[str] = field(default_factory=set)
    devices: dict[str, dict[int, dict[str, str]]] = field(default_factory=dict)  # network -> index -> device
    mesh_backend: str = ""
    mesh: list[dict[str, str]] = field(default_factory=list)  # connect/accept lines
    ib_gid: dict[int, str] = field(default_factory=dict)  # NCCL dev -> GID index
    channels: list[Channel] = field(default_factory=list)


def parse(text: str, node: str) -> NodeLog:
    out = NodeLog(node)
    pid_rank: dict[str, int] = {}
    for raw in str(text).splitlines():
        m = _LINE.match(raw.strip())
        if not m:
            continue
        msg, pid = m.group("msg").strip(), m.group("pid")
        init = _INIT.search(msg)
        if init:
            rank = int(init.group("rank"))
            out.ranks[rank], out.nranks = int(pid), int(init.group("nranks"))
            pid_rank[pid] = rank
            continue
        if _SPLIT.search(msg):
            out.split_pids.add(int(pid))
            continue
        if msg.startswith("NCCL version "):
            out.version = msg.split()[2].split("+")[0]
        elif msg.startswith("NCCL_NET_PLUGIN set by environment to "):
            out.plugin_env = msg.rsplit(" ", 1)[1]
        elif msg.startswith("NET/Plugin: Loaded net plugin "):
            out.plugin_loaded = msg[len("NET/Plugin: Loaded net plugin ") :].split(" (")[0]
        elif msg.startswith("NET/Plugin") and (
            "Could not find" in msg or "Failed" in msg or "dlerror" in msg
        ):
            out.plugin_missing.append(msg)
        elif msg.startswith("Using network "):
            out.networks.add(msg.split()[2])
        elif msg.startswith("Failed to initialize NET plugin "):
            out.failed_networks.add(msg.rsplit(" ", 1)[1])
        elif re.match(r"^NET/(\w+) : Using \[", msg):
            net = msg.split("/", 1)[1].split(" ", 1)[0]
            out.devices[net] = {
                int(d.group("i")): {k: v for k, v in d.groupdict().items() if v and k != "i"}
                for d in _DEVICE.finditer(msg.split(" : Using", 1)[1].split(";")[0])
            }
        elif msg.startswith("NET/Mesh : backend "):
            out.mesh_backend = msg[len("NET/Mesh : backend ") :].split(",")[0]
        elif mesh := _MESH_CONN.match(msg):
            out.mesh.append(mesh.groupdict())
        elif qp := _IB_QP.match(msg):
            out.ib_gid[int(qp.group("dev"))] = qp.group("gid")
        elif msg.startswith("Channel "):
            c = _CHANNEL.match(msg)
            if c and pid in pid_rank:
                out.channels.append(_channel(node, pid_rank[pid], c))
    return out


def _channel(node: str, rank: int, c: re.Match[str]) -> Channel:
    ch = Channel(
        node=node,
        rank=rank,
        channel=int(c.group("ch")),
        src=int(c.group("src")),
        dst=int(c.group("dst")),
        direction=c.group("dir") or "",
        via=c.group("via"),
    )
    ch.peer_rank = ch.dst if ch.src == rank else ch.src
    net = _NET_VIA.match(ch.via)
    if net:
        ch.transport, ch.net_dev = f"NET/{net.group('net')}", int(net.group("dev"))
    else:
        ch.transport = ch.via.split("/")[0]
    return ch


# ---------------------------------------------------------------- expectations and verdict


def expectations(
    plans: Mapping[str, Any],
    env: Mapping[str, Mapping[str, str]],
    rdma_ports: Mapping[str, Any] | None = None,
    fabrics: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """What the fabric should show, from each node's mesh_network plan, NCCL environment, RDMA ports and
    fabric rails (``mesh_network_fabric``; absent on a mesh).

    ``facing``: node -> peer -> the local interfaces and RDMA devices whose link reaches that peer;
    ``addresses``: node -> its addresses; ``transport``: node -> rdma | tcp; ``plugin``: node -> the net
    plugin NCCL_NET_PLUGIN names (empty when none); ``rails``: node -> NIC name -> rail name (nodes of a
    fabric of several rails); ``rail_optimized``: node -> whether NCCL_CROSS_NIC=0 keeps channels on their
    rail.
    """
    facing: dict[str, dict[str, list[str]]] = {}
    addresses: dict[str, list[str]] = {}
    fabrics = fabrics or {}
    for node, plan in plans.items():
        plan = plan or {}
        devs: dict[str, list[str]] = {}
        for port in (rdma_ports or {}).get(node) or []:
            if port.get("netdev"):
                devs.setdefault(port["netdev"], []).append(str(port.get("device")))
        addrs = [str(plan.get("node_address") or "")]
        for link in plan.get("links") or []:
            facing.setdefault(node, {})[link["peer"]] = [link["ifname"], *devs.get(link["ifname"], [])]
            addrs.append(str(link.get("address") or ""))
        fabric = plan.get("fabric")
        if fabric:
            # A switched fabric's ports (every rail's) face every peer.
            ports = dict.fromkeys([fabric["name"], *(str(r.get("ifname")) for r in fabrics.get(node) or [])])
            for peer in plan.get("peers") or {}:
                facing.setdefault(node, {})[peer] = [name for p in ports for name in (p, *devs.get(p, []))]
            addrs.append(str(fabric.get("address") or ""))
            addrs += [str(r.get("address") or "") for r in fabrics.get(node) or []]
        addresses[node] = list(dict.fromkeys(a for a in addrs if a))
    transport = {n: _transport(e or {}) for n, e in env.items()}
    plugin = {n: (e or {}).get("NCCL_NET_PLUGIN", "") for n, e in env.items()}
    rails = {}
    for node in dict.fromkeys([*plans, *env, *fabrics]):
        found = nccl_rails.rail_map(
            fabrics.get(node) or [], (rdma_ports or {}).get(node) or [], env.get(node) or {}
        )
        if found:
            rails[node] = found
    optimized = {n: str((e or {}).get("NCCL_CROSS_NIC", "")) == "0" for n, e in env.items()}
    return {
        "facing": facing,
        "addresses": addresses,
        "transport": transport,
        "plugin": plugin,
        "rails": rails,
        "rail_optimized": optimized,
    }


def _transport(env: Mapping[str, str]) -> str:
    """rdma or tcp as nccl_env wrote it (NCCL_IB_DISABLE, NCCL_IB_HCA); empty when the file says nothing."""
    if env.get("NCCL_IB_DISABLE") == "1" or env.get("NCCL_MESH_TRANSPORT") == "tcp":
        return "tcp"
    if (
        env.get("NCCL_IB_DISABLE") == "0"
        or env.get("NCCL_IB_HCA")
        or env.get("NCCL_MESH_TRANSPORT") == "verbs"
    ):
        return "rdma"
    return ""


def _peer_of_address(addr: str, node: str, addresses: Mapping[str, list[str]]) -> str:
    """The node an address belongs to (not the asking node itself); empty when unknown or ambiguous."""
    try:
        ip = ipaddress.ip_address(addr.split("/")[0])
    except ValueError:
        return ""
    owners = [
        n for n, addrs in addresses.items() if n != node and str(ip) in {a.split("/")[0] for a in addrs}
    ]
    return owners[0] if len(owners) == 1 else ""


def _plugin_name(configured: str) -> str:
    """'mesh' for NCCL_NET_PLUGIN=mesh or a path to libnccl-net-mesh.so."""
    base = configured.rsplit("/", 1)[-1]
    return re.sub(r"^libnccl-net-?|\.so.*$", "", base).lower()


def verdict(logs: Mapping[str, str], expect: Mapping[str, Any]) -> dict[str, Any]:
    """{'verdict': pass | fail | not run, 'problems', 'notes', 'channels', 'nodes'} for the nodes' logs."""
    nodes = {node: parse(text, node) for node, text in logs.items()}
    problems: list[str] = []
    notes: list[str] = []
    rank_node = {rank: n.node for n in nodes.values() for rank in n.ranks}
    split = [n.node for n in nodes.values() if n.split_pids]
    if split:
        notes.append(
            f"{', '.join(split)}: split communicators (a device mesh, e.g. HSDP) number their ranks "
            "anew, and a channel line does not say its communicator: P2P and SHM channels are taken as "
            "inside the node, NET channels as to another node"
        )
    facing = expect.get("facing") or {}
    addresses = expect.get("addresses") or {}
    channels: list[Channel] = []
    for n in nodes.values():
        if not n.ranks:
            notes.append(
                f"{n.node}: no NCCL initialisation in the log (not run with NCCL, or NCCL_DEBUG unset)"
            )
            continue
        wanted_plugin = (expect.get("plugin") or {}).get(n.node) or (
            n.plugin_env if n.plugin_env.lower() not in ("", "none") else ""
        )
        net_channels = [c for c in n.channels if c.transport.startswith("NET/")]
        if wanted_plugin and _plugin_name(wanted_plugin) != n.plugin_loaded.lower():
            why = (
                "; ".join(dict.fromkeys(n.plugin_missing))
                or f"NCCL used {', '.join(sorted(n.networks)) or 'no network'}"
            )
            problems.append(
                f"{n.node}: NCCL_NET_PLUGIN={wanted_plugin} was configured but the plugin was not loaded "
                f"({why})"
            )
        rdma = (expect.get("transport") or {}).get(n.node) == "rdma"
        if rdma:
            on_socket = [c for c in net_channels if c.transport == "NET/Socket"]
            if on_socket:
                failed = sorted(n.failed_networks)
                problems.append(
                    f"{n.node}: RDMA was configured but {len(on_socket)} channels fell back to NCCL's Socket "
                    "transport" + (f" ({'; '.join(failed)} failed to initialise)" if failed else "")
                )
            if n.mesh_backend and n.mesh_backend != "verbs" and net_channels:
                problems.append(
                    f"{n.node}: RDMA was configured but the Mesh plugin ran its {n.mesh_backend} backend"
                )
            if "Socket" in n.networks and not net_channels:
                failed_names = ", ".join(sorted(n.failed_networks)) or "IB"
                notes.append(
                    f"{n.node}: NCCL chose its Socket network ({failed_names} did not initialise), but no "
                    "channel left the node: nothing crossed the network"
                )
        for c in n.channels:
            if n.ranks.get(c.rank) in n.split_pids:
                # NCCL uses P2P and SHM only between ranks of one host (their host hashes match).
                c.peer_node = n.node if c.transport in ("P2P", "SHM") else ""
            else:
                c.peer_node = rank_node.get(c.peer_rank, "")
            _locate(c, n, addresses)
            channels.append(c)
        problems += _wrong_ports(n, facing.get(n.node) or {}, addresses)
    crossing, rail_notes = nccl_rails.judge(
        channels, expect.get("rails") or {}, expect.get("rail_optimized") or {}, set(split)
    )
    problems += crossing
    notes += rail_notes
    used = sorted({c.transport for c in channels})
    state = "fail" if problems else "pass"
    if not any(n.ranks for n in nodes.values()):
        state = "not run"
    return {
        "verdict": state,
        "problems": problems,
        "notes": notes,
        "transports": used,
        "channels": [vars(c) for c in channels],
        "nodes": {
            name: {
                "nccl": n.version,
                "ranks": sorted(n.ranks),
                "network": sorted(n.networks),
                "plugin": {"configured": n.plugin_env, "loaded": n.plugin_loaded},
                "devices": {k: list(v.values()) for k, v in n.devices.items()},
                "mesh_backend": n.mesh_backend,
                "connections": n.mesh,
            }
            for name, n in nodes.items()
        },
    }


def _locate(c: Channel, n: NodeLog, addresses: Mapping[str, list[str]]) -> None:
    """The NIC (and GID) of a network channel: the plugin's device list, or the Mesh plugin's connections."""
    if c.net_dev is None:
        return
    net = c.transport.split("/", 1)[1]
    dev = (n.devices.get(net) or {}).get(c.net_dev) or {}
    c.nic = dev.get("name", "")
    if net == "IB" and c.net_dev in n.ib_gid:
        c.gid = n.ib_gid[c.net_dev]
    if net == "Mesh":
        # The Mesh plugin picks the NIC per peer (files/plugin_src): its connections to that peer's addresses.
        nics = sorted(
            {m["nic"] for m in n.mesh if _peer_of_address(m["peer"], n.node, addresses) == c.peer_node}
        )
        gids = sorted(
            {m["gid"] for m in n.mesh if _peer_of_address(m["peer"], n.node, addresses) == c.peer_node}
        )
        c.nic, c.gid = ",".join(nics), ",".join(g for g in gids if g != "-")


def _wrong_ports(
    n: NodeLog, facing: Mapping[str, list[str]], addresses: Mapping[str, list[str]]
) -> list[str]:
    """Traffic to a peer that left by a port that does not face that peer."""
    out = []
    if not facing:
        return out
    wrong: dict[tuple[str, str, str], int] = {}
    for m in n.mesh:
        peer = _peer_of_address(m["peer"], n.node, addresses)
        if peer and peer in facing and m["nic"] not in facing[peer]:
            key = (peer, m["peer"], m["nic"])
            wrong[key] = wrong.get(key, 0) + 1
    for (peer, address, nic), count in sorted(wrong.items()):
        out.append(
            f"{n.node}: {count} Mesh plugin connections to {peer} ({address}) left by {nic}, which does not "
            f"face {peer} ({', '.join(facing[peer])} does)"
        )
    seen = set()
    for c in n.channels:
        if not c.transport.startswith("NET/") or c.transport == "NET/Mesh" or not c.peer_node or not c.nic:
            continue
        want = facing.get(c.peer_node)
        key = (c.peer_node, c.nic)
        if want and c.nic not in want and key not in seen:
            seen.add(key)
            out.append(
                f"{n.node}: channels to {c.peer_node} go by {c.nic} ({c.transport}), which does not face "
                f"{c.peer_node} ({', '.join(want)} does)"
            )
    return out


def markdown(result: Mapping[str, Any]) -> list[str]:
    """The report's section: one row per node and peer (transport, NIC, GID, rail where the fabric has rails,
    channels), then the verdict."""
    channels = result.get("channels", [])
    railed = any(c.get("rail") for c in channels)
    rail_head = ("| rail ", "|---") if railed else ("", "")
    lines = [
        "",
        "## NCCL path",
        "",
        f"| node | peer | transport | NIC | GID {rail_head[0]}| channels |",
        f"|---|---|---|---|---{rail_head[1]}|---|",
    ]
    groups: dict[tuple[str, ...], int] = {}
    for c in channels:
        key = (
            c["node"],
            c["peer_node"] or f"rank {c['peer_rank']}",
            c["via"],
            c["nic"] or "-",
            c["gid"] or "-",
            *([nccl_rails.label(c)] if railed else []),
        )
        groups[key] = groups.get(key, 0) + 1
    lines += [f"| {' | '.join(key)} | {count} |" for key, count in sorted(groups.items())]
    lines += ["", f"Verdict: {result.get('verdict')}."]
    lines += [f"- {p}" for p in result.get("problems", [])] + [
        f"- note: {x}" for x in result.get("notes", [])
    ]
    return lines
