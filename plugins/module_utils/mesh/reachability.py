# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which paths a node must reach, and whether it reached them.

path_checks lists what one node probes, from its plan: each cable's far end and every peer's node address
(mesh) or fabric address (switched; on every rail, with several), each with the interface its route must take,
the hops the cabling gives and a don't-fragment size at the MTU; check_targets picks those netplan_apply's
rollback probe pings.
verify_results joins the checks with the answers of `ip -j route get` and ping (path_probe runs them), and
reachability_table shows every node's results as one all-pairs table.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import ping as ping_cmd

# --------------------------------------------------------------------------- checks


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
        return _fabric_checks(plan, size)
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


def _fabric_checks(plan: Mapping[str, Any], size: int) -> list[dict[str, Any]]:
    """Switched: each peer's fabric address over the fabric port; with several rails, each peer's address on
    every rail, from this node's address on that rail (its source rule picks the rail's port)."""
    rail_peers = plan.get("rail_peers")
    checks: list[dict[str, Any]] = []
    for peer, address in plan["peers"].items():
        if not rail_peers:
            checks.append(
                {
                    "dst": peer,
                    "kind": "fabric",
                    "address": address,
                    "expected_dev": plan["fabric"]["name"],
                    "size": size,
                    "source": "",
                    "hops": 1,
                }
            )
            continue
        for rail in plan["rails"]:
            checks.append(
                {
                    "dst": peer,
                    "kind": "fabric",
                    "address": rail_peers[peer][rail["rail"]],
                    "expected_dev": rail["ifname"],
                    "size": size,
                    "source": rail["address"],
                    "hops": 1,
                    "rail": rail["name"],
                }
            )
    return checks


def _neighbours(plan: Mapping[str, Any]) -> set[str]:
    """The nodes before and after this one in the host list (round the end): the peers every rail but the
    first probes after an apply, so the probe stays a few pings per rail on a fabric of any size."""
    peers = list(plan.get("peers") or {})
    if not peers:
        return set()
    k = int(plan.get("index") or 0)
    return {peers[(k - 1) % len(peers)], peers[k % len(peers)]}


def check_targets(
    extra: Sequence[str],
    plan: Mapping[str, Any],
    mtu: Any,
    checks: Sequence[Mapping[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """Targets for netplan_apply: extra addresses (plain ping) plus every direct path check (DF at the MTU).

    Node addresses further than one cable are left to verify: they answer only once every node on the way
    has applied its own plan, and the nodes apply at the same time. On a switched fabric with several rails
    every peer is probed on rail 0 (as on one port), the neighbours in the host list on each further rail,
    each from this node's address on the rail. ``checks``: path_checks(plan, mtu), when already made.
    """
    targets: list[dict[str, Any]] = [
        {"address": str(a), "size": 0, "name": f"management path to {a}"} for a in extra if a
    ]
    what = {"link": "link address", "node": "node address", "fabric": "fabric address"}
    near = _neighbours(plan)
    for c in path_checks(plan, mtu) if checks is None else checks:
        if c.get("hops", 1) != 1 or (c.get("rail", "rail0") != "rail0" and c["dst"] not in near):
            continue
        target = {
            "address": c["address"],
            "size": c["size"],
            # ports and peers, the way an operator reads a cabling problem
            "name": f"{plan.get('host', 'this node')} {c['expected_dev']} -> {c['dst']} {what[c['kind']]}",
        }
        if c.get("rail"):
            target["source"] = c["source"]
        targets.append(target)
    return targets


# --------------------------------------------------------------------------- results


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
        for key in ("cable", "path", "rail"):
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
            elif check.get("rail"):
                where = f" ({check['rail']}, {check['expected_dev']} from {check['source']})"
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
