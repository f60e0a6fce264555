# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which paths a node must reach, and whether it reached them.

path_checks lists what one node probes, from its plan: each cable's far end and every peer's node address
(mesh) or fabric address (switched; on every rail, with several), each with the interface its route must take,
the hops the cabling gives and a don't-fragment size at the MTU; with several rails also an ARP check per peer
NIC (arp_check: only that NIC's MAC may answer). check_targets picks those netplan_apply's rollback probe
pings.
verify_results joins the checks with the answers of `ip -j route get` and ping, arp_results the ARP checks
with arping's (path_probe runs them); matrices and reachability_table show every node's results as all-pairs
matrices: one per rail of a fabric with several, else one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import arp as arp_cmd
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
    backup_cable = {}
    for link in plan["links"]:
        for target in link.get("routes", [link["peer"]]):
            first_cable[target] = link
        for target in link.get("backups") or []:
            backup_cable[target] = link
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
        check = {
            "dst": dst,
            "kind": "node",
            "address": plan["peers"][dst],
            "expected_dev": via["ifname"] if via else "",
            "size": size,
            "source": plan["node_address"],
            "hops": int((plan.get("hops") or {}).get(dst) or 1),
            "path": path,
        }
        backup = backup_cable.get(dst)
        if backup:
            # the backup route (backup.py): through that neighbour (a full mesh: one hop more than the direct
            # cable; a ring: the long way round)
            way = (plan.get("backup_paths") or {}).get(dst) or [plan.get("host", ""), backup["peer"], dst]
            check.update(backup_dev=backup["ifname"], backup_path=list(way))
        if plan.get("backup") == "ring":
            # a ring turns a packet round at a lost cable further on: the address answers over more hops
            check["rerouted_far"] = True
        checks.append(check)
    return checks


def _fabric_checks(plan: Mapping[str, Any], size: int) -> list[dict[str, Any]]:
    """Switched: each peer's fabric address over the fabric port; with several rails, each peer's address on
    every rail, from this node's address on that rail (its source rule picks the rail's port), and an ARP
    check per peer NIC (``arp_checks``)."""
    rail_peers = plan.get("rail_peers")
    checks: list[dict[str, Any]] = []
    # this node's own NICs, named once (every ARP check lists them: a node answering for itself is flux too)
    own = [
        {"mac": r.get("mac"), "nic": f"{plan.get('host', 'this node')} {r['ifname']}, {r['name']}"}
        for r in plan["rails"]
        if r.get("mac")
    ]
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
        nics = _peer_nics(plan, peer)
        # the MACs that may answer an ARP on any rail, named once per peer (not per rail)
        names = [
            {"mac": n["mac"], "nic": f"{peer} {n.get('ifname') or '?'}, rail{k}"}
            for k, n in enumerate(nics)
            if n.get("mac")
        ] + own
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
                    "node": plan.get("host", ""),
                    "peer_ifname": nics[rail["rail"]]["ifname"] or "",
                }
            )
            checks.append(arp_check(plan, peer, rail, nics, names))
    return checks


def _peer_nics(plan: Mapping[str, Any], peer: str) -> list[dict[str, Any]]:
    """The peer's NIC on every rail ({ifname, mac}; None where the cluster phase did not know it)."""
    known = list((plan.get("rail_peer_nics") or {}).get(peer) or [])
    rails = len(plan["rails"])
    return [dict(known[i]) if i < len(known) else {"ifname": None, "mac": None} for i in range(rails)]


def arp_check(
    plan: Mapping[str, Any],
    peer: str,
    rail: Mapping[str, Any],
    nics: Sequence[Mapping[str, Any]],
    names: Sequence[Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """An ARP for the peer's address on ``rail``, asked from this node's NIC on that rail: only the peer's NIC
    on the rail may answer (``expected_mac``); ``nics`` names every MAC of the peer and of this node
    (``names``: that list made once per peer by the caller, else made here)."""
    i = int(rail["rail"])
    if names is None:
        names = [
            {"mac": n.get("mac"), "nic": f"{peer} {n.get('ifname') or '?'}, rail{k}"}
            for k, n in enumerate(nics)
        ]
        names += [
            {"mac": r.get("mac"), "nic": f"{plan.get('host', 'this node')} {r['ifname']}, {r['name']}"}
            for r in plan["rails"]
        ]
    return {
        "dst": peer,
        "kind": "arp",
        "address": plan["rail_peers"][peer][i],
        "expected_dev": rail["ifname"],
        "size": 0,
        "source": rail["address"],
        "rail": rail["name"],
        "node": plan.get("host", ""),
        "peer_ifname": nics[i].get("ifname") or "",
        "expected_mac": str(nics[i].get("mac") or ""),
        "nics": [n for n in names if n["mac"]],
    }


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
        if c["kind"] == "arp":
            continue  # verify's: the apply needs answers, not who gives them
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
        for key in ("cable", "path", "rail", "node", "peer_ifname"):
            if check.get(key):
                entry[key] = check[key]
        if check.get("hops"):
            entry["expected_hops"] = int(check["hops"])
            entry["hops"] = hops
        hops_ok = not check.get("hops") or hops is None or hops == int(check["hops"])
        entry["ok"] = entry["route_ok"] and ping_ok and hops_ok
        backup_path = list(check.get("backup_path") or [])
        if not entry["route_ok"] and backup_path and dev == check.get("backup_dev") and ping_ok:
            # degraded, not cut: the direct cable is out and the node address answers over its backup route
            entry.update(ok=True, degraded=True, path=backup_path, expected_hops=len(backup_path) - 1)
            entry["note"] = (
                f"{check['dst']} node address {check['address']} answers over its backup route "
                f"({' -> '.join(backup_path)}, via {dev}): its direct route via {check['expected_dev']} "
                "is out"
            )
        elif check.get("rerouted_far") and entry["route_ok"] and ping_ok and not hops_ok:
            # the first cable is up, a cable further on is out: turned round there, the packet went the long
            # way (backup.py's transit tables), so the pair still talks, over more hops
            entry.update(ok=True, degraded=True)
            entry["note"] = (
                f"{check['dst']} node address {check['address']} answers, its replies over {hops} hops, "
                f"not {check['hops']}: a cable on the route ({' -> '.join(check.get('path') or [])}) is out "
                "and the ring's transit tables send the pair the long way round"
            )
        if not entry["ok"] and check.get("rail"):
            entry["error"] = _rail_error(check, entry, ping)
        elif not entry["ok"]:
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
            elif check.get("path") and len(check["path"]) > 2:
                where = f" (path {' -> '.join(check['path'])})"
            entry["error"] = (
                f"{check['dst']} {check['kind']} address {check['address']}{where}: " + "; ".join(why)
            )
        out.append(entry)
    return out


def _last_line(result: Mapping[str, Any]) -> str:
    lines = (result.get("stderr") or result.get("stdout") or "").strip().splitlines()
    return lines[-1] if lines else ""


def _rail_error(check: Mapping[str, Any], entry: Mapping[str, Any], ping: Mapping[str, Any]) -> str:
    """A rail's path, named as an operator reads a multi-NIC fabric: the node, its NIC and rail, then what
    failed: the egress (the route from the NIC's address takes another NIC) and/or the DF ping."""
    own = check["expected_dev"]
    why = []
    if not entry["route_ok"]:
        why.append(
            f"egress: traffic from {check['source']} to {check['dst']} leaves by {entry['dev'] or '?'}, "
            f"not {own}"
        )
    if not entry["ping_ok"]:
        err = _last_line(ping)
        peer = " ".join(str(x) for x in (check["dst"], check.get("peer_ifname"), check["address"]) if x)
        why.append(
            f"reach: {peer} does not answer a DF ping of {check['size']} B from {check['source']}"
            + (f": {err}" if err else "")
        )
    return f"{check.get('node') or 'this node'} {own} ({check['rail']}) " + "; ".join(why)


def arp_results(
    checks: Sequence[Mapping[str, Any]], answers: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Join ARP checks (arp_check) with arping's results (rc, stdout, stderr): ok when only the NIC's own MAC
    answered (exactly one MAC where the cluster phase did not know it). ``macs``: the MACs that answered;
    ``skipped``: why nothing was asked (no arping on the node)."""
    out: list[dict[str, Any]] = []
    for check, answer in zip(checks, answers, strict=True):
        parsed = arp_cmd.parse(str(answer.get("stdout") or ""), str(check["address"]))
        macs = parsed["macs"]
        expected = str(check.get("expected_mac") or "").lower()
        entry: dict[str, Any] = {
            key: check.get(key)
            for key in ("dst", "kind", "address", "expected_dev", "rail", "node", "peer_ifname")
        }
        entry.update(dev=check["expected_dev"], expected_mac=expected or None, macs=macs)
        nic = f"{check['dst']} {check.get('peer_ifname') or '?'} {check['address']} ({check['rail']})"
        asked = f"when asked from {check['expected_dev']}"
        if answer.get("rc") == 127:
            entry.update(ok=True, skipped=f"arping is not installed (Debian: {arp_cmd.PACKAGE})")
        elif parsed["sent"] is None:
            entry.update(ok=False, error=f"{nic} ARP: arping failed {asked}: {_last_line(answer)}")
        elif not macs:
            entry.update(ok=False, error=f"{nic} ARP: no answer {asked}")
        elif (macs == [expected]) if expected else len(macs) == 1:
            entry["ok"] = True
        else:
            owners = {str(n["mac"]).lower(): n["nic"] for n in check.get("nics") or []}
            answered = ", ".join(f"{m} ({owners.get(m, 'not a NIC of ' + str(check['dst']))})" for m in macs)
            flux = "ARP flux" if len(macs) > 1 else "ARP"
            own = check.get("peer_ifname") or "its NIC"
            want = f"; only {own}'s {expected} should answer" if expected else ""
            error = f"{nic} {flux}: answered by {answered} {asked}{want}"
            entry.update(ok=False, flux=len(macs) > 1, error=error)
        out.append(entry)
    return out


# --------------------------------------------------------------------------- report


def _rail_key(name: Any) -> tuple[int, str]:
    text = str(name or "")
    digits = text[len("rail") :] if text.startswith("rail") else ""
    return (int(digits) if digits.isdigit() else -1, text)


def _cell(entries: Sequence[Mapping[str, Any]]) -> tuple[bool, str]:
    """One node pair's cell: ok with the interface, RTT and, over more than one cable, the hop count of the
    node-address (mesh) or fabric check (switched); else what failed first."""
    main = next((e for e in entries if e.get("kind") in ("node", "fabric")), entries[-1])
    bad = [e for e in entries if not e.get("ok")]
    if not bad:
        rtt = main.get("rtt_ms")
        dev = main.get("dev")
        cell = f"ok {dev} {rtt:.2f}ms" if isinstance(rtt, (int, float)) else f"ok {dev}"
        hops = main.get("hops") or main.get("expected_hops")
        cell += f" {hops} hops" if isinstance(hops, int) and hops > 1 else ""
        return True, cell + (" DEGRADED (backup route)" if main.get("degraded") else "")
    first = next((e for e in bad if e.get("kind") != "arp"), bad[0])
    if first.get("kind") == "arp":
        return False, "FAIL ARP flux" if first.get("flux") else "FAIL ARP"
    dev = first.get("dev") or "?"
    want = first.get("expected_dev")
    return False, f"FAIL via {dev}" + (f" (want {want})" if want and want != dev else "")


def matrices(results: Mapping[str, Any], hosts: Sequence[str]) -> list[dict[str, Any]]:
    """The all-pairs matrices of verify results ({src: [verify_results entries]}): one per rail of a fabric
    with several rails, else one. Each: {rail (None for the one), cells: {src: {dst: cell}}, pairs_ok, pairs};
    a cell is ok only when every check of that pair (on that rail) passed."""
    by_rail: dict[Any, dict[tuple[str, str], list[Mapping[str, Any]]]] = {}
    for src in hosts:
        for entry in results.get(src) or []:
            pairs = by_rail.setdefault(entry.get("rail"), {})
            pairs.setdefault((src, str(entry.get("dst"))), []).append(entry)
    out = []
    for rail in sorted(by_rail, key=_rail_key) or [None]:
        cells: dict[str, dict[str, str]] = {}
        good = 0
        for (src, dst), entries in by_rail.get(rail, {}).items():
            ok, cells.setdefault(src, {})[dst] = _cell(entries)
            good += ok
        out.append({"rail": rail, "cells": cells, "pairs_ok": good, "pairs": len(by_rail.get(rail, {}))})
    return out


def _grid(matrix: Mapping[str, Any], hosts: Sequence[str]) -> list[str]:
    cells = matrix["cells"]
    head = "from \\ to"
    texts = [c for row in cells.values() for c in row.values()]
    width = max([len(head), *(len(h) for h in hosts), *(len(c) for c in texts)]) + 2
    lines = [head.ljust(width) + "".join(h.ljust(width) for h in hosts)]
    for src in hosts:
        row = [cells.get(src, {}).get(dst, "-" if src == dst else "not checked") for dst in hosts]
        lines.append(src.ljust(width) + "".join(c.ljust(width) for c in row))
    return lines


def reachability_table(results: Mapping[str, Any], hosts: Sequence[str]) -> str:
    """All-pairs table from verify results ({src: [verify_results entries]}); one cell per node pair (cells:
    matrices). A fabric with several rails gets one table per rail, each with its count of good pairs, then
    every NIC whose ARP was answered by another MAC (ARP flux) or whose traffic left by another NIC; a mesh
    or a one-port fabric one table, the count of good pairs, then every cable a link check failed on, named
    by both ends."""
    lines: list[str] = []
    tables = matrices(results, hosts)
    for matrix in tables:
        on = ""
        if matrix["rail"] is not None:
            lines += [""] * bool(lines) + [str(matrix["rail"])]
            on = f" on {matrix['rail']}"
        lines += _grid(matrix, hosts)
        lines.append(f"{matrix['pairs_ok']}/{matrix['pairs']} node pairs OK{on}")
    entries = [(src, e) for src in hosts for e in results.get(src) or []]
    down: dict[str, list[str]] = {}
    for src, entry in entries:
        if entry.get("kind") == "link" and entry.get("cable") and not entry.get("ok"):
            down.setdefault(str(entry["cable"]), []).append(src)
    for cable, ends in down.items():
        lines.append(f"cable {cable} FAILED (its far end does not answer from {', '.join(ends)})")
    for src, entry in entries:
        if entry.get("degraded"):
            lines.append(f"DEGRADED {src} -> {entry['note']}")
    nics = _nic_lines(entries)
    lines += [""] * bool(nics) + nics
    return "\n".join(line.rstrip() for line in lines)


def _nic_lines(entries: Sequence[tuple[str, Mapping[str, Any]]]) -> list[str]:
    """Under a rails table: each NIC that failed its ARP or egress check once (with the nodes that saw it),
    and the nodes whose ARP answers were not checked."""
    seen: dict[str, list[str]] = {}
    skipped: dict[str, list[str]] = {}
    for src, entry in entries:
        if entry.get("kind") == "arp" and entry.get("skipped"):
            skipped.setdefault(str(entry["skipped"]), [])
            if src not in skipped[str(entry["skipped"])]:
                skipped[str(entry["skipped"])].append(src)
        if entry.get("ok") or not entry.get("rail"):
            continue
        if entry.get("kind") == "arp" and entry.get("error"):
            # one line per NIC however many peers asked (the message names the asking port, not the node)
            seen.setdefault(f"{entry['error']} (seen from", []).append(src)
        elif entry.get("kind") == "fabric" and not entry.get("route_ok"):
            seen.setdefault(str(entry.get("error") or ""), [])
    lines = [f"{error} {', '.join(srcs)})" if srcs else error for error, srcs in seen.items()]
    lines += [f"ARP answers not checked from {', '.join(srcs)}: {why}" for why, srcs in skipped.items()]
    return lines
