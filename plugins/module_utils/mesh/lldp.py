# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What LLDP (lldpd's `lldpcli -f json show neighbors`) says about the cabling of the data ports.

`-f json` changes shape with the number of entries: `interface` is a list of one-key objects for
several interfaces and an object keyed by name for one; `chassis` is keyed by the system name when the
neighbour sends one. Both shapes are read here (fixtures in tests/unit/fixtures/lldpd/).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import cabling


class LldpError(ValueError):
    """lldpcli output that cannot be read; the message quotes it."""


def _items(value: Any) -> Iterable[tuple[str, Any]]:
    """(key, value) of an object, or of each one-key object of a list."""
    if isinstance(value, Mapping):
        yield from value.items()
    elif isinstance(value, list):
        for entry in value:
            if isinstance(entry, Mapping):
                yield from entry.items()


def parse_neighbors(text: Any) -> dict[str, dict[str, str]]:
    """{local ifname: {sysname, chassis_id, port_id, port_descr, ...}} from `lldpcli -f json show neighbors`.

    With several neighbours on one port (a switch in between), the first is kept.
    """
    try:
        data = json.loads(text) if isinstance(text, str) else text
    except ValueError as exc:
        raise LldpError(f"lldpcli output is not JSON: {str(text)[:80]!r}") from exc
    if not isinstance(data, Mapping) or not isinstance(data.get("lldp"), Mapping):
        raise LldpError(f"lldpcli output {str(text)[:80]!r} has no 'lldp' object")
    out: dict[str, dict[str, str]] = {}
    for ifname, entry in _items(data["lldp"].get("interface")):
        if ifname in out or not isinstance(entry, Mapping):
            continue
        sysname, chassis_id, mgmt_ip = "", "", ""
        for name, chassis in _items(entry.get("chassis")):
            if not isinstance(chassis, Mapping):
                continue
            # Keyed by the system name; a neighbour without one is keyed "id" and has no name.
            sysname = "" if name == "id" and "id" not in chassis else str(name)
            ident = chassis.get("id") if "id" in chassis else chassis if name == "id" else {}
            chassis_id = str(ident.get("value") or "") if isinstance(ident, Mapping) else ""
            ips = chassis.get("mgmt-ip")
            mgmt_ip = str(ips[0] if isinstance(ips, list) and ips else ips or "")
            break
        port = entry.get("port") if isinstance(entry.get("port"), Mapping) else {}
        port_id = port.get("id") if isinstance(port.get("id"), Mapping) else {}
        out[str(ifname)] = {
            "sysname": sysname,
            "chassis_id": chassis_id,
            "port_id": str(port_id.get("value") or ""),
            "port_id_type": str(port_id.get("type") or ""),
            "port_descr": str(port.get("descr") or ""),
            "mgmt_ip": mgmt_ip,
        }
    return out


def peer_port_name(neighbor: Mapping[str, str]) -> str:
    """The neighbour's interface name: the port id when lldpd sent the name, else the description."""
    if neighbor.get("port_id_type") == "ifname":
        return str(neighbor.get("port_id") or "")
    return str(neighbor.get("port_descr") or neighbor.get("port_id") or "")


def host_by_name(names: Mapping[str, Iterable[str]]) -> dict[str, str]:
    """{system name (any spelling a host answers to, lower case): inventory name}."""
    out: dict[str, str] = {}
    for host, aliases in names.items():
        for alias in [host, *aliases]:
            if alias:
                out.setdefault(str(alias).lower(), host)
                out.setdefault(str(alias).partition(".")[0].lower(), host)
    return out


def _natural(name: str) -> list[Any]:
    """Sort key that puts data2 before data10."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def cabling_report(
    host: str,
    cables: Iterable[Mapping[str, Any]] | Mapping[str, Any],
    neighbors: Mapping[str, Mapping[str, str]],
    names: Mapping[str, Iterable[str]],
) -> dict[str, list[str]]:
    """Declared cables against LLDP: {errors: miscablings, silent: ports where LLDP sees nobody}.

    ``cables``: this host's cables, each {ifname, peer, peer_port} (the mesh_network plan's links; peer_port
    empty when the peer's port is matched by MAC only); ``names``: {inventory name: [hostname, fqdn, ...]}
    so that a neighbour's system name is mapped back to the inventory. A port that faces another node, or
    the right node but another port than the inventory says, is a miscabling. A mesh_network_ports mapping
    ({peer: port or [ports]}) stands for cables whose far ports are not known.
    """
    if isinstance(cables, Mapping):
        cables = [
            {"ifname": cabling.port_name(spec), "peer": peer, "peer_port": ""}
            for peer, value in cables.items()
            for spec in cabling.port_specs(value)
        ]
    lookup = host_by_name(names)
    errors: list[str] = []
    silent: list[str] = []
    for cable in cables:
        ifname = str(cable.get("ifname") or "")
        peer = str(cable.get("peer") or "")
        if not ifname:
            continue  # matched by MAC only: the interface name is known after the apply
        seen = neighbors.get(ifname)
        if not seen or not (seen.get("sysname") or seen.get("chassis_id")):
            silent.append(
                f"{host} {ifname}: LLDP sees no neighbour (the inventory says {peer}; no lldpd there?), "
                "left to the probes after the apply"
            )
            continue
        sysname = str(seen.get("sysname") or "")
        faces = lookup.get(sysname.lower()) or lookup.get(sysname.partition(".")[0].lower()) or sysname
        far = peer_port_name(seen)
        if faces != peer:
            shown = faces or f"chassis {seen.get('chassis_id')}"
            errors.append(f"{host} {ifname} faces {shown} {far}, the inventory says {peer}")
        elif cable.get("peer_port") and far and far != cable["peer_port"]:
            errors.append(
                f"{host} {ifname} faces {peer} {far}, the inventory says {peer} {cable['peer_port']}"
            )
    return {"errors": errors, "silent": silent}


def discovered_ports(
    neighbors: Mapping[str, Mapping[str, str]],
    names: Mapping[str, Iterable[str]],
    host: str,
    exclude: Iterable[str] = (),
) -> dict[str, Any]:
    """What discover.yml writes for one host: {ports: {peer: ifname or [ifnames]}, faces: {ifname: 'peer
    port'}, unknown}.

    A peer seen on several ports (rails) gets a list, in the order both ends write it: by the port of the
    end that comes first in ``names``, so the k-th port each end lists is the same cable. Neighbours that
    are not inventory hosts (a switch, a host outside the inventory) are listed in ``unknown`` as
    'ifname: sysname'; ports in ``exclude`` (the management interface) are skipped.
    """
    lookup = host_by_name(names)
    order = list(names)
    skip = set(exclude)
    found: dict[str, list[tuple[str, str]]] = {}
    faces: dict[str, str] = {}
    unknown: list[str] = []
    for ifname in sorted(neighbors, key=_natural):
        if ifname in skip:
            continue
        seen = neighbors[ifname]
        sysname = str(seen.get("sysname") or "")
        peer = lookup.get(sysname.lower()) or lookup.get(sysname.partition(".")[0].lower())
        if peer is None or peer == host:
            unknown.append(f"{ifname}: {sysname or seen.get('chassis_id') or '?'}")
            continue
        found.setdefault(peer, []).append((ifname, peer_port_name(seen)))
        faces[ifname] = f"{peer} {peer_port_name(seen)}"
    ports: dict[str, Any] = {}
    for peer, ends in found.items():
        mine_first = host in order and peer in order and order.index(host) < order.index(peer)
        ends.sort(key=lambda end: _natural(end[0] if mine_first else end[1]))
        listed = [ifname for ifname, _far in ends]
        ports[peer] = listed[0] if len(listed) == 1 else listed
    return {"ports": ports, "faces": faces, "unknown": unknown}


def data_port_candidates(
    link_json: Any, addr_json: Any, exclude_addresses: Iterable[str]
) -> dict[str, list[str]]:
    """{ports: [...], excluded: [...]} from `ip -j -d link show` and `ip -j addr show`: the Ethernet ports
    with carrier that may be data ports (not loopback, bridges, bridge members or other virtual links but
    veths) and, apart, the ones holding an address Ansible connects to (the management interface)."""
    try:
        links = json.loads(link_json) if isinstance(link_json, str) else link_json
        addrs = json.loads(addr_json) if isinstance(addr_json, str) else addr_json
    except ValueError as exc:
        raise LldpError(f"`ip -j` output is not JSON: {exc}") from exc
    skip = set(exclude_addresses)
    holding = {
        str(entry.get("ifname"))
        for entry in addrs or []
        if isinstance(entry, Mapping)
        for info in entry.get("addr_info") or []
        if info.get("local") in skip
    }
    ports: list[str] = []
    for link in links or []:
        if not isinstance(link, Mapping) or link.get("link_type") != "ether":
            continue
        kind = str(((link.get("linkinfo") or {}).get("info_kind")) or "")
        if kind not in ("", "veth") or link.get("master"):
            continue
        if "LOWER_UP" not in (link.get("flags") or []):
            continue
        ports.append(str(link["ifname"]))
    return {
        "ports": sorted((p for p in ports if p not in holding), key=_natural),
        "excluded": sorted(holding, key=_natural),
    }
