# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fabric verification, step one: which links to measure, and in which rounds.

- links(): the links of the data network from each node's mesh_network plan (a direct link per node
  pair in a mesh; the fabric ports of every pair, or of a ring, in a switched fabric: one per rail with
  several rails).
- schedule(): rounds of disjoint pairs (no node in two pairs of one round), so every pair of a round
  can run at the same time: the circle method (round-robin tournament) for all pairs, a greedy
  edge colouring for a ring; a switched fabric's rails of one node pair are measured in the same round,
  each NIC against its peer's NIC on the rail; parts_in_round(): one node's parts in a round.
- VerifyError and check_hosts(): the error every verify_* module_utils raises and the host-list
  check they share; they live here, where verification starts.

The other steps: verify_parse (what the nodes return), verify_thresholds (judging a measurement),
verify_report (the report document and its files).
"""

from __future__ import annotations

from typing import Any

PATTERNS = ("all_pairs", "ring")
DIRECTIONS = ("both", "one")


class VerifyError(ValueError):
    """Bad input for the verification plan or report; the message names the bad value."""


# --------------------------------------------------------------------------- links and rounds


def check_hosts(hosts: Any) -> list[str]:
    """The host list as given, once each host is a non-empty name that appears once."""
    if not isinstance(hosts, (list, tuple)) or not all(isinstance(h, str) and h for h in hosts):
        raise VerifyError(f"hosts must be a list of host names, got {hosts!r}")
    seen = set()
    for host in hosts:
        if host in seen:
            raise VerifyError(f"host {host!r} appears twice in the host list")
        seen.add(host)
    return list(hosts)


def _candidate_pairs(hosts: list[str], pattern: str) -> list[tuple[str, str]]:
    if pattern not in PATTERNS:
        raise VerifyError(f"pattern {pattern!r} must be one of {', '.join(PATTERNS)}")
    n = len(hosts)
    if pattern == "all_pairs":
        return [(hosts[i], hosts[j]) for i in range(n) for j in range(i + 1, n)]
    if n < 2:
        return []
    if n == 2:
        return [(hosts[0], hosts[1])]
    return [(hosts[i], hosts[(i + 1) % n]) for i in range(n)]


def links(plans: dict[str, Any], hosts: Any, pattern: str = "all_pairs") -> list[dict[str, Any]]:
    """The links to measure, from the mesh_network plan of every host (``mesh_network_plan`` facts).

    Mesh: every cable between the pattern's pairs (all_pairs: every cable there is; ring: the cables between
    each host and the next, which must exist), with the cable's addresses and ports; a pair joined by several
    cables (rails) has one link per cable. Switched: the fabric port and address of each end; with several
    rails one link per rail (its NIC and address at each end, ``rail`` its name). Each entry: a, b, k (the
    cable's or rail's number within its pair), a_ifname, b_ifname, a_address, b_address, label (and rail).
    """
    names = check_hosts(hosts)
    if not isinstance(plans, dict):
        raise VerifyError(f"plans must be a mapping of host to mesh_network_plan, got {type(plans).__name__}")
    missing = [h for h in names if not isinstance(plans.get(h), dict)]
    if missing:
        raise VerifyError(f"no mesh_network plan for {', '.join(missing)} (did mesh_network run on them?)")
    out: list[dict[str, Any]] = []
    mesh = any(plans[h].get("topology") != "switched" for h in names)
    pairs = _candidate_pairs(names, pattern)
    if mesh and pattern == "all_pairs":
        # Every cable: node pairs without one are reached over several cables, which verify's reachability
        # checks (hop counts); a link measurement is of one cable.
        pairs = [(a, b) for a, b in pairs if any(x.get("peer") == b for x in plans[a].get("links", []))]
    for a, b in pairs:
        plan_a, plan_b = plans[a], plans[b]
        rails = [] if plan_a.get("topology") != "switched" else _rails(plan_a, plan_b, a, b)
        if rails:
            ends = rails
        elif plan_a.get("topology") == "switched":
            ends = [
                (
                    0,
                    {"ifname": plan_a["fabric"]["name"], "address": plan_a["node_address"]},
                    {"ifname": plan_b["fabric"]["name"], "address": plan_b["node_address"]},
                )
            ]
        else:
            side_a = [x for x in plan_a.get("links", []) if x.get("peer") == b]
            side_b = {int(x.get("k") or 0): x for x in plan_b.get("links", []) if x.get("peer") == a}
            if not side_a or not side_b:
                raise VerifyError(f"no direct link between {a} and {b} in the mesh plans")
            ends = []
            for link_a in side_a:
                k = int(link_a.get("k") or 0)
                link_b = side_b.get(k)
                if link_b is None:
                    raise VerifyError(f"{b}'s plan has no cable {k + 1} to {a}, {a}'s has")
                ends.append(
                    (
                        k,
                        {"ifname": link_a["ifname"], "address": link_a["address"]},
                        {"ifname": link_b["ifname"], "address": link_b["address"]},
                    )
                )
        for k, end_a, end_b in ends:
            link = {
                "a": a,
                "b": b,
                "k": k,
                "a_ifname": end_a["ifname"],
                "b_ifname": end_b["ifname"],
                "a_address": end_a["address"],
                "b_address": end_b["address"],
                "label": f"{a}:{end_a['ifname']} <-> {b}:{end_b['ifname']}",
            }
            if end_a.get("rail"):
                link["rail"] = end_a["rail"]
            out.append(link)
    return out


def _rails(plan_a: dict[str, Any], plan_b: dict[str, Any], a: str, b: str) -> list[tuple[Any, ...]]:
    """The ends of a switched pair on every rail, when the fabric has several: (rail number, end a, end b)."""
    rails_a, rails_b = list(plan_a.get("rails") or []), list(plan_b.get("rails") or [])
    if len(rails_a) < 2 and len(rails_b) < 2:
        return []
    if len(rails_a) != len(rails_b):
        raise VerifyError(f"{a} has {len(rails_a)} rails and {b} {len(rails_b)} in their mesh_network plans")
    return [
        (
            int(ra["rail"]),
            {"ifname": ra["ifname"], "address": ra["address"], "rail": ra["name"]},
            {"ifname": rb["ifname"], "address": rb["address"]},
        )
        for ra, rb in zip(rails_a, rails_b, strict=True)
    ]


def tournament_rounds(hosts: Any) -> list[list[tuple[str, str]]]:
    """Round-robin tournament (circle method): every pair exactly once, no host twice in a round.

    n-1 rounds of n/2 pairs for even n; n rounds of (n-1)/2 pairs for odd n (one host rests per round).
    """
    names = check_hosts(hosts)
    if len(names) < 2:
        return []
    slots: list[str | None] = list(names) + ([None] if len(names) % 2 else [])
    n = len(slots)
    rounds: list[list[tuple[str, str]]] = []
    for _round in range(n - 1):
        pairs = []
        for i in range(n // 2):
            first, second = slots[i], slots[n - 1 - i]
            if first is not None and second is not None:
                # Keep the host-list order inside a pair, so a pair reads the same as its link.
                pairs.append((first, second) if names.index(first) < names.index(second) else (second, first))
        rounds.append(sorted(pairs, key=lambda p: (names.index(p[0]), names.index(p[1]))))
        # Keep slot 0 fixed and rotate the others by one.
        slots = [slots[0], slots[-1], *slots[1:-1]]
    return rounds


def greedy_rounds(pairs: list[tuple[Any, ...]]) -> list[list[tuple[Any, ...]]]:
    """Put each pair into the first round where neither end is busy (optimal for paths and rings).

    A pair is (a, b) or (a, b, cable): the first two entries are the nodes it keeps busy.
    """
    rounds: list[list[tuple[Any, ...]]] = []
    busy: list[set[str]] = []
    for pair in pairs:
        a, b = pair[0], pair[1]
        for index, used in enumerate(busy):
            if a not in used and b not in used:
                rounds[index].append(pair)
                used.update((a, b))
                break
        else:
            rounds.append([pair])
            busy.append({a, b})
    return rounds


def schedule(
    link_list: Any,
    hosts: Any,
    pattern: str = "all_pairs",
    directions: str = "both",
    max_concurrent: int = 0,
) -> list[list[dict[str, Any]]]:
    """Rounds of directed measurements; the pairs of one round share no host and can run together.

    Each measurement: client, server (the client sends to the server), client_ifname, server_ifname,
    client_address, server_address, link (the undirected label), label (directed), port_offset (added to the
    servers' ports: the rails of a pair run at once) and, on a switched fabric's rail, rail. With
    directions='both' every round is followed by the same round with client and server swapped.
    max_concurrent > 0 splits rounds so that at most that many pairs run at once.
    """
    names = check_hosts(hosts)
    if directions not in DIRECTIONS:
        raise VerifyError(f"directions {directions!r} must be one of {', '.join(DIRECTIONS)}")
    try:
        cap = int(max_concurrent)
    except (TypeError, ValueError) as exc:
        raise VerifyError(f"max_concurrent {max_concurrent!r} is not an integer") from exc
    if cap < 0:
        raise VerifyError(f"max_concurrent {max_concurrent!r} must be 0 (no limit) or positive")
    if not isinstance(link_list, list):
        raise VerifyError(f"links must be a list, got {type(link_list).__name__}")
    # One entry per cable: a pair joined by several cables (rails of direct cables) measures each in a round
    # of its own. A switched fabric's rails (links with a rail) are one NIC each at both ends: a round
    # measures them all at once, scheduled by the pair's rail 0.
    by_pair = {(x["a"], x["b"], int(x.get("k") or 0)): x for x in link_list}
    for a, b, _k in by_pair:
        if a not in names or b not in names:
            raise VerifyError(f"link {a} <-> {b} names a host outside {names}")
    rails: dict[tuple[str, str], list[tuple[str, str, int]]] = {}
    for key, link in by_pair.items():
        if link.get("rail"):
            rails.setdefault(key[:2], []).append(key)
    units = [p for p in by_pair if p[:2] not in rails or p[2] == 0]
    if pattern == "all_pairs":
        raw = [[(a, b, 0) for a, b in rnd if (a, b, 0) in by_pair] for rnd in tournament_rounds(names)]
        raw += greedy_rounds([p for p in units if not any(p in rnd for rnd in raw)])
    elif pattern == "ring":
        raw = greedy_rounds(units)
    else:
        raise VerifyError(f"pattern {pattern!r} must be one of {', '.join(PATTERNS)}")
    raw = [[q for p in rnd for q in sorted(rails.get(p[:2], [p]))] for rnd in raw if rnd]
    if cap:
        raw = [rnd[i : i + cap] for rnd in raw for i in range(0, len(rnd), cap)]

    def directed(link: dict[str, Any], forward: bool) -> dict[str, Any]:
        c, s = ("a", "b") if forward else ("b", "a")
        out = {
            "client": link[c],
            "server": link[s],
            "client_ifname": link[f"{c}_ifname"],
            "server_ifname": link[f"{s}_ifname"],
            "client_address": link[f"{c}_address"],
            "server_address": link[f"{s}_address"],
            "link": link["label"],
            "label": f"{link[c]}:{link[c + '_ifname']} -> {link[s]}:{link[s + '_ifname']}",
            # the rails of a pair measured at once: each its own servers' ports (bandwidth, latency)
            "port_offset": 2 * int(link.get("k") or 0) if link.get("rail") else 0,
        }
        if link.get("rail"):
            out["rail"] = link["rail"]
        return out

    rounds: list[list[dict[str, Any]]] = []
    for rnd in raw:
        rounds.append([directed(by_pair[p], True) for p in rnd])
        if directions == "both":
            rounds.append([directed(by_pair[p], False) for p in rnd])
    return rounds


def rdma_port_for(rdma_ports: list[dict[str, Any]] | None, ifname: str) -> dict[str, Any]:
    """The RDMA device/port whose netdev is ``ifname``, else the first active port, else {} (TCP)."""
    ports = [p for p in rdma_ports or [] if isinstance(p, dict)]
    own = [p for p in ports if p.get("netdev") == ifname]
    active = [p for p in ports if p.get("active")]
    return (own or active or [{}])[0]


def parts_in_round(
    round_: list[dict[str, Any]],
    host: str,
    rdma_ports: list[dict[str, Any]] | None = None,
    base_port: int = 0,
) -> list[dict[str, Any]]:
    """This host's parts in a round, one per rail of a switched pair measured at once (mesh and one-port
    fabrics: at most one); empty when the host rests. Each: role ('client' or 'server'), pair (the
    measurement), ifname (this end's port), port and latency_port (the servers' ports, apart per rail), rdma
    (the RDMA device/port behind ifname, {} without one)."""
    parts = []
    for pair in round_:
        if host not in (pair["client"], pair["server"]):
            continue
        role = "client" if pair["client"] == host else "server"
        port = int(base_port) + int(pair.get("port_offset") or 0)
        parts.append(
            {
                "role": role,
                "pair": pair,
                "ifname": pair[f"{role}_ifname"],
                "port": port,
                "latency_port": port + 1,
                "rdma": rdma_port_for(rdma_ports, pair[f"{role}_ifname"]),
            }
        )
    return parts
