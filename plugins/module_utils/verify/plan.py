# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fabric verification, step one: which links to measure, and in which rounds.

- links(): the links of the data network from each node's mesh_network plan (a direct link per node
  pair in a mesh; the fabric ports of every pair, or of a ring, in a switched fabric).
- schedule(): rounds of disjoint pairs (no node in two pairs of one round), so every pair of a round
  can run at the same time: the circle method (round-robin tournament) for all pairs, a greedy
  edge colouring for a ring; role_in_round(): one node's part in a round.
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

    Mesh: the direct link between each pair (the pair's link addresses and ports). Switched: the fabric
    port and address of each end. Each entry: a, b, a_ifname, b_ifname, a_address, b_address, label.
    """
    names = check_hosts(hosts)
    if not isinstance(plans, dict):
        raise VerifyError(f"plans must be a mapping of host to mesh_network_plan, got {type(plans).__name__}")
    missing = [h for h in names if not isinstance(plans.get(h), dict)]
    if missing:
        raise VerifyError(f"no mesh_network plan for {', '.join(missing)} (did mesh_network run on them?)")
    out: list[dict[str, Any]] = []
    for a, b in _candidate_pairs(names, pattern):
        plan_a, plan_b = plans[a], plans[b]
        if plan_a.get("topology") == "switched":
            end_a = {"ifname": plan_a["fabric"]["name"], "address": plan_a["node_address"]}
            end_b = {"ifname": plan_b["fabric"]["name"], "address": plan_b["node_address"]}
        else:
            link_a = next((x for x in plan_a.get("links", []) if x.get("peer") == b), None)
            link_b = next((x for x in plan_b.get("links", []) if x.get("peer") == a), None)
            if link_a is None or link_b is None:
                raise VerifyError(f"no direct link between {a} and {b} in the mesh plans")
            end_a = {"ifname": link_a["ifname"], "address": link_a["address"]}
            end_b = {"ifname": link_b["ifname"], "address": link_b["address"]}
        out.append(
            {
                "a": a,
                "b": b,
                "a_ifname": end_a["ifname"],
                "b_ifname": end_b["ifname"],
                "a_address": end_a["address"],
                "b_address": end_b["address"],
                "label": f"{a}:{end_a['ifname']} <-> {b}:{end_b['ifname']}",
            }
        )
    return out


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


def greedy_rounds(pairs: list[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    """Put each pair into the first round where neither end is busy (optimal for paths and rings)."""
    rounds: list[list[tuple[str, str]]] = []
    busy: list[set[str]] = []
    for a, b in pairs:
        for index, used in enumerate(busy):
            if a not in used and b not in used:
                rounds[index].append((a, b))
                used.update((a, b))
                break
        else:
            rounds.append([(a, b)])
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
    client_address, server_address, link (the undirected label) and label (directed). With
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
    by_pair = {(x["a"], x["b"]): x for x in link_list}
    for a, b in by_pair:
        if a not in names or b not in names:
            raise VerifyError(f"link {a} <-> {b} names a host outside {names}")
    if pattern == "all_pairs":
        raw = [[p for p in rnd if p in by_pair] for rnd in tournament_rounds(names)]
        raw += greedy_rounds([p for p in by_pair if not any(p in rnd for rnd in raw)])
    elif pattern == "ring":
        raw = greedy_rounds(list(by_pair))
    else:
        raise VerifyError(f"pattern {pattern!r} must be one of {', '.join(PATTERNS)}")
    raw = [rnd for rnd in raw if rnd]
    if cap:
        raw = [rnd[i : i + cap] for rnd in raw for i in range(0, len(rnd), cap)]

    def directed(link: dict[str, Any], forward: bool) -> dict[str, Any]:
        c, s = ("a", "b") if forward else ("b", "a")
        return {
            "client": link[c],
            "server": link[s],
            "client_ifname": link[f"{c}_ifname"],
            "server_ifname": link[f"{s}_ifname"],
            "client_address": link[f"{c}_address"],
            "server_address": link[f"{s}_address"],
            "link": link["label"],
            "label": f"{link[c]}:{link[c + '_ifname']} -> {link[s]}:{link[s + '_ifname']}",
        }

    rounds: list[list[dict[str, Any]]] = []
    for rnd in raw:
        rounds.append([directed(by_pair[p], True) for p in rnd])
        if directions == "both":
            rounds.append([directed(by_pair[p], False) for p in rnd])
    return rounds


def role_in_round(round_: list[dict[str, Any]], host: str) -> dict[str, Any]:
    """This host's part in a round: {'role': 'client'|'server'|'idle', 'pair': measurement or None}."""
    for pair in round_:
        if pair["client"] == host:
            return {"role": "client", "pair": pair}
        if pair["server"] == host:
            return {"role": "server", "pair": pair}
    return {"role": "idle", "pair": None}
