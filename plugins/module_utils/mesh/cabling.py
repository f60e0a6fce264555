# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cabling of a direct-connect fabric as a graph: nodes, and cables between two nodes' ports.

The inventory describes cables, not a topology name: each node's ``mesh_network_ports`` maps a peer to the
port (or list of ports, one per cable: rails) that faces it, and a peer without a cable is simply absent
(ring, chain, partial mesh). Everything here is pure and ordered by the host list, so the same inventory
always gives the same cables, paths and order:

- cables(): the cables both ends list (the k-th port a node lists for a peer faces the k-th port the peer
  lists for it), and a message for every cable listed by one end only or with a different count;
- connectivity_errors(): the graph must be connected (every node reaches every other over the cables);
- Graph: hop counts (BFS), the next hop towards every node along a shortest path (ties: the neighbour first
  in the host list), the cables a path crosses, and which node pairs a cable's failure cuts off;
- node_order(): the nodes along the ring or chain (rank order for collectives), starting at the first host;
- shape(): full_mesh, ring, chain or partial, for messages and the NCCL choice.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

# How many steps the search for a ring/chain through every node may take before it settles for a
# breadth-first order (rings and chains need n steps; a dense mesh finds one at once).
ORDER_SEARCH_BUDGET = 200_000


def port_specs(value: Any) -> list[Any]:
    """The ports a node lists for one peer: a port (name or {name, macaddress}), or a list of them."""
    if value is None or value == "" or value == []:
        return []
    if isinstance(value, (list, tuple)):
        return [v for v in value if v not in (None, "")]
    return [value]


def port_name(spec: Any) -> str:
    """The interface name of a port spec ('' for a port matched by MAC only)."""
    if isinstance(spec, Mapping):
        return str(spec.get("name") or "")
    return str(spec or "")


def port_label(spec: Any) -> str:
    """How messages show a port: its name, else its MAC."""
    if isinstance(spec, Mapping):
        return str(spec.get("name") or spec.get("macaddress") or "?")
    return str(spec)


def cable_label(cable: Mapping[str, Any]) -> str:
    """'node1:data1 <-> node2:data0', the way an operator reads a cable."""
    return f"{cable['a']}:{port_label(cable['a_port'])} <-> {cable['b']}:{port_label(cable['b_port'])}"


def cables(hosts: Sequence[str], ports: Mapping[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
    """(cables, errors) from every node's port map ``{host: {peer: port or [ports]}}``.

    A cable is {a, b, a_port, b_port, k}: ``a`` comes first in ``hosts``, ``k`` numbers the cables of one
    pair (rails) in the order both ends list them. Peers that are not hosts, and a host naming itself, are
    left to the per-host port check; every other inconsistency is an error naming both ends.
    """
    names = list(hosts)
    out: list[dict[str, Any]] = []
    errors: list[str] = []
    maps = {h: ports.get(h) if isinstance(ports.get(h), Mapping) else {} for h in names}
    for j, b in enumerate(names):
        for a in names[:j]:
            a_side = port_specs(maps[a].get(b))
            b_side = port_specs(maps[b].get(a))
            if not a_side and not b_side:
                continue
            if not a_side or not b_side:
                missing, other, listed = (a, b, b_side) if not a_side else (b, a, a_side)
                errors.append(
                    f"{missing}: mesh_network_ports has no port for peer {other!r}, but {other} lists "
                    f"{missing} on {', '.join(port_label(p) for p in listed)} (both ends list every cable)"
                )
                continue
            if len(a_side) != len(b_side):
                errors.append(
                    f"{a} lists {len(a_side)} cable(s) to {b} ({', '.join(port_label(p) for p in a_side)}), "
                    f"{b} lists {len(b_side)} to {a} ({', '.join(port_label(p) for p in b_side)}): "
                    "both ends list every cable"
                )
                continue
            for k, (pa, pb) in enumerate(zip(a_side, b_side, strict=True)):
                out.append({"a": a, "b": b, "a_port": pa, "b_port": pb, "k": k})
    return out, errors


def full_mesh_cables(hosts: Sequence[str]) -> list[dict[str, Any]]:
    """One cable per node pair, ports unknown: the cabling that mesh_links assumes without a port map."""
    names = list(hosts)
    return [
        {"a": a, "b": b, "a_port": "", "b_port": "", "k": 0} for j, b in enumerate(names) for a in names[:j]
    ]


class Graph:
    """The nodes and cables, with shortest paths computed once (BFS from every node)."""

    def __init__(self, hosts: Sequence[str], cable_list: Iterable[Mapping[str, Any]]) -> None:
        self.hosts = list(hosts)
        self.index = {h: i for i, h in enumerate(self.hosts)}
        self.cables = [dict(c) for c in cable_list]
        self.by_pair: dict[tuple[str, str], list[dict[str, Any]]] = {}
        neighbours: dict[str, set[str]] = {h: set() for h in self.hosts}
        # (port, peer) of each node's cables
        self.ends: dict[str, list[tuple[str, str]]] = {h: [] for h in self.hosts}
        for cable in self.cables:
            a, b = cable["a"], cable["b"]
            if a not in self.index or b not in self.index:
                continue
            self.by_pair.setdefault(self.pair(a, b), []).append(cable)
            self.ends[a].append((port_label(cable["a_port"]), b))
            self.ends[b].append((port_label(cable["b_port"]), a))
            neighbours[a].add(b)
            neighbours[b].add(a)
        self.neighbours = {h: sorted(n, key=self.index.__getitem__) for h, n in neighbours.items()}
        self.dist = {h: self._bfs(h) for h in self.hosts}
        # each node's next hop towards every other, computed once per node when first asked
        self._next: dict[str, dict[str, str]] = {}

    def pair(self, x: str, y: str) -> tuple[str, str]:
        return (x, y) if self.index[x] < self.index[y] else (y, x)

    def _bfs(self, src: str) -> dict[str, int]:
        dist = {src: 0}
        queue = deque([src])
        while queue:
            here = queue.popleft()
            for peer in self.neighbours[here]:
                if peer not in dist:
                    dist[peer] = dist[here] + 1
                    queue.append(peer)
        return dist

    def components(self) -> list[list[str]]:
        """Groups of nodes that reach each other, each in host order, the group of the first host first."""
        seen: set[str] = set()
        groups: list[list[str]] = []
        for host in self.hosts:
            if host in seen:
                continue
            group = sorted(self.dist[host], key=self.index.__getitem__)
            seen.update(group)
            groups.append(group)
        return groups

    def cables_between(self, x: str, y: str) -> list[dict[str, Any]]:
        """The cables of one pair, cable 0 first (node-address routes take cable 0)."""
        return sorted(self.by_pair.get(self.pair(x, y), []), key=lambda c: c["k"])

    def hops(self, src: str, dst: str) -> int | None:
        return self.dist[src].get(dst)

    def next_hops(self, src: str) -> dict[str, str]:
        """{dst: the neighbour of ``src`` on a shortest path to ``dst``} for every node ``src`` reaches (the
        neighbour first in host order on a tie)."""
        table = self._next.get(src)
        if table is None:
            table = {}
            for dst, far in self.dist[src].items():
                if far == 1:
                    table[dst] = dst
                elif far > 1:
                    table[dst] = next(p for p in self.neighbours[src] if self.dist[p].get(dst) == far - 1)
            self._next[src] = table
        return table

    def next_hop(self, src: str, dst: str) -> str | None:
        """The neighbour of ``src`` on a shortest path to ``dst`` (the first in host order on a tie)."""
        return self.next_hops(src).get(dst)

    def backup_kind(self) -> str:
        """Which backup routes the cabling allows (backup.py): 'full_mesh' (3+ nodes, every pair cabled),
        'ring' (4+ nodes, two neighbours each: the long way round) or '' (a pair of nodes, chains and partial
        meshes: none)."""
        shape = self.shape()
        if shape == "full_mesh" and len(self.hosts) >= 3:
            return "full_mesh"
        return "ring" if shape == "ring" else ""

    def backup_hops(self, src: str) -> dict[str, str]:
        """{dst: the neighbour of ``src`` that carries its backup route to ``dst``}; {} without backups. In a
        full mesh: the first node after ``src`` in host order (round the end) that is not ``dst``, so that for
        one destination the backups of all the other nodes form one cycle through them: a packet whose
        cables fail one after another walks on instead of coming straight back. In a ring: the other
        neighbour than the route's next hop (the long way round)."""
        kind = self.backup_kind()
        if kind == "ring":
            hops = self.next_hops(src)
            return {dst: next(p for p in self.neighbours[src] if p != step) for dst, step in hops.items()}
        if not kind:
            return {}
        k = self.index[src]
        after = self.hosts[k + 1 :] + self.hosts[:k]
        return {dst: next(p for p in after if p != dst) for dst in after}

    def backup_paths(self, src: str) -> dict[str, list[str]]:
        """{dst: the nodes a packet from ``src`` to ``dst``'s node address passes on its backup route}; {}
        without backups. Full mesh: through the backup neighbour, which sends it over its own cable. Ring: on
        round the ring the way the backup neighbour lies (each node carries on what arrives from one
        neighbour to the other: backup.py's transit tables), the long way."""
        hops = self.backup_hops(src)
        if self.backup_kind() != "ring":
            return {dst: [src, step, dst] for dst, step in hops.items()}
        n = len(self.hosts)
        cycle = self.order()
        at = cycle.index(src)
        forward = cycle[at:] + cycle[:at] + [src]  # src, its next node along the cycle, ..., src
        backward = forward[::-1]  # src, its previous node, ..., src
        out: dict[str, list[str]] = {}
        for dst, step in hops.items():
            way = forward if step == forward[1] else backward
            out[dst] = way[: n - int(self.dist[src][dst]) + 1]
        return out

    def path(self, src: str, dst: str) -> list[str]:
        """The nodes from ``src`` to ``dst`` along the routes (next hop after next hop); [] when cut off."""
        if self.hops(src, dst) is None:
            return []
        out = [src]
        while out[-1] != dst:
            step = self.next_hop(out[-1], dst)
            if step is None:
                return []
            out.append(step)
        return out

    def paths(self) -> dict[str, dict[str, list[str]]]:
        """{src: {dst: path(src, dst)}} for every pair that reaches each other, at the cost of the paths'
        length: from each destination outwards (breadth-first), a node's path is its next hop's, the node in
        front."""
        out: dict[str, dict[str, list[str]]] = {h: {} for h in self.hosts}
        for dst in self.hosts:
            tail = {dst: [dst]}
            for node in list(self.dist[dst])[1:]:  # nearer nodes first: the next hop's path is known
                tail[node] = out[node][dst] = [node, *tail[self.next_hops(node)[dst]]]
        return out

    def path_cables(self, src: str, dst: str) -> list[dict[str, Any]]:
        """The cables a packet from ``src`` to ``dst``'s node address crosses (cable 0 of each hop)."""
        nodes = self.path(src, dst)
        return [self.cables_between(nodes[i], nodes[i + 1])[0] for i in range(len(nodes) - 1)]

    def transit(self) -> list[str]:
        """Nodes that forward packets between two other nodes (they need IP forwarding on): each node inside
        a path is the next hop of the node before it, towards another node."""
        out: set[str] = set()
        for src in self.hosts:
            out.update(step for dst, step in self.next_hops(src).items() if step != dst)
        return [h for h in self.hosts if h in out]

    def cut_by(self, cable: Mapping[str, Any]) -> list[tuple[str, str]]:
        """Node pairs (src, dst) whose route crosses ``cable``: with static routes they lose each other
        while it is down (a node's node address is routed along one path; nothing reroutes)."""
        key = (cable["a"], cable["b"], cable["k"])
        out = []
        for src in self.hosts:
            for dst in self.hosts:
                if src != dst and any((c["a"], c["b"], c["k"]) == key for c in self.path_cables(src, dst)):
                    out.append((src, dst))
        return out

    def shape(self) -> str:
        """full_mesh (every pair cabled), ring (4+ nodes, two neighbours each), chain (3+ nodes in a line),
        or partial; rails (several cables per pair) are told by max_cables()."""
        n = len(self.hosts)
        degrees = [len(self.neighbours[h]) for h in self.hosts]
        if all(d == n - 1 for d in degrees):
            return "full_mesh"
        connected = len(self.components()) == 1
        if connected and n >= 4 and all(d == 2 for d in degrees):
            return "ring"
        if connected and n >= 3 and sorted(degrees) == [1, 1] + [2] * (n - 2):
            return "chain"
        return "partial"

    def max_cables(self) -> int:
        return max((len(v) for v in self.by_pair.values()), default=0)

    def order(self) -> list[str]:
        """The nodes along a ring through every node when the cabling has one, else along a line through
        every node, else in breadth-first order; see node_order()."""
        if len(self.hosts) <= 2:
            return list(self.hosts)
        found = self._walk(self.hosts[0], closed=True)
        if found:
            return found
        for start in [self.hosts[0], *(h for h in self.hosts if len(self.neighbours[h]) == 1)]:
            found = self._walk(start, closed=False)
            if found:
                return found
        start = self.hosts[0]
        return sorted(self.hosts, key=lambda h: (self.dist[start].get(h, len(self.hosts)), self.index[h]))

    def _walk(self, start: str, closed: bool) -> list[str]:
        """Depth-first search for a path through every node from ``start`` (a cycle when ``closed``),
        neighbours tried in host order: a full mesh gives the host list itself."""
        n = len(self.hosts)
        path = [start]
        on_path = {start}
        steps = 0

        def extend() -> bool:
            nonlocal steps
            steps += 1
            if steps > ORDER_SEARCH_BUDGET:
                return False
            if len(path) == n:
                return not closed or start in self.neighbours[path[-1]]
            for peer in self.neighbours[path[-1]]:
                if peer in on_path:
                    continue
                path.append(peer)
                on_path.add(peer)
                if extend():
                    return True
                on_path.discard(path.pop())
            return False

        return list(path) if extend() else []


def connectivity_errors(graph: Graph) -> list[str]:
    """A message when some nodes cannot reach the others over the cables."""
    groups = graph.components()
    if len(groups) <= 1:
        return []
    shown = " | ".join(", ".join(g) for g in groups)
    return [
        f"the cabling is not connected: no cable joins the groups {shown} "
        "(every node must reach every other over the data cables)"
    ]


def device_ports(graph: Graph, host: str) -> list[tuple[str, str]]:
    """(port, peer it faces) of one node's cables, in the order NCCL numbers the node's devices when each
    port is its own device: by interface name (data2 before data10)."""
    return sorted(
        graph.ends.get(host, []),
        key=lambda end: [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", end[0])],
    )


def nccl_pairs(graph: Graph, shape: str, order: Sequence[str]) -> list[tuple[str, str]]:
    """The node pairs whose ranks NCCL connects directly: every pair in a full mesh (rings, trees and
    point-to-point all occur), else the neighbours along ``order`` (the ring algorithm's pairs)."""
    if shape == "full_mesh":
        return [(a, b) for j, b in enumerate(graph.hosts) for a in graph.hosts[:j]]
    pairs = [(order[i], order[i + 1]) for i in range(len(order) - 1)]
    if len(order) > 2 and order[0] in graph.neighbours.get(order[-1], []):
        pairs.append((order[-1], order[0]))
    return pairs


def device_index_problems(graph: Graph, shape: str, order: Sequence[str]) -> list[str]:
    """Node pairs that NCCL's built-in subnet-aware routing (2.30.7) cannot connect on some device index.

    NCCL gives both ends of a connection the same device index (NCCL_CROSS_NIC=0), and with
    NCCL_IB_SUBNET_AWARE_ROUTING=1 corrects the choice only from the other end's GIDs: the connector from
    the listener's (src/transport/net_ib/connect.cc:802), the listener from the connector's (:1465). So a
    connection works only when at least one end's device of that index faces the other end.
    """
    problems = []
    devices = {h: device_ports(graph, h) for h in graph.hosts}
    for a, b in nccl_pairs(graph, shape, order):
        mine, theirs = devices[a], devices[b]
        for i in range(max(len(mine), len(theirs))):
            pa = mine[i] if i < len(mine) else None
            pb = theirs[i] if i < len(theirs) else None
            if (pa and pa[1] == b) or (pb and pb[1] == a):
                continue
            shown_a = f"{pa[0]} faces {pa[1]}" if pa else "none"
            shown_b = f"{pb[0]} faces {pb[1]}" if pb else "none"
            problems.append(f"{a}-{b} device {i}: {a} {shown_a}, {b} {shown_b}")
    return problems


def node_order(hosts: Sequence[str], ports: Mapping[str, Any] | None = None) -> list[str]:
    """The nodes in the order collectives should rank them: along the physical ring or chain.

    ``ports``: every node's mesh_network_ports ({host: {peer: port or [ports]}}); without it (or with a full
    mesh) the order is the host list itself, as before. A ring starts at the first host and goes on towards
    its neighbour that comes first in the host list; a chain starts at the first host when it is an end, else
    at the end that comes first. Consecutive nodes (and the last and the first, in a ring) then share a cable,
    so a ring algorithm's traffic never leaves the direct cables.
    """
    names = list(hosts)
    if ports is None:
        return names
    cable_list, _errors = cables(names, ports)
    return Graph(names, cable_list).order()
