# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A node's data ports: which interface a port names, the rules on a node's port map, and the MTU.

ip_link_interfaces reads the interfaces from `ip -j link`; resolve_port finds the interface an entry of
mesh_network_ports names (by name, MAC or both); port_errors checks one node's port map, fabric_port_errors
its fabric ports; port_entry is a port's netplan entry. mtu_errors is the MTU rule, and port_mtu_errors
holds the MTU against what each port can carry.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import cabling
from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh.addressing import MeshAddressingError
from ansible_collections.rdmaops.cluster.plugins.module_utils.node.values import whole

# --------------------------------------------------------------------------- ports


def ip_link_interfaces(text: Any) -> dict[str, str]:
    """{ifname: mac} from `ip -j link show` (netlink, so right inside a network namespace too)."""
    try:
        links = json.loads(text) if isinstance(text, str) else text
    except ValueError as exc:
        raise MeshAddressingError(f"`ip -j link` output is not JSON: {str(text)[:80]!r}") from exc
    if not isinstance(links, list):
        raise MeshAddressingError(f"`ip -j link` output {str(text)[:80]!r} is not a list of links")
    return {
        str(link["ifname"]): str(link.get("address") or "").lower() for link in links if link.get("ifname")
    }


def resolve_port(
    spec: Any, interfaces: Mapping[str, str], label: str
) -> tuple[dict[str, str] | None, str | None]:
    """Turn 'ifname' or {name, macaddress} into {name, macaddress}; or return an error message."""
    if isinstance(spec, str):
        spec = {"name": spec}
    if not isinstance(spec, Mapping) or not (spec.get("name") or spec.get("macaddress")):
        return (
            None,
            f"{label} {spec!r} is neither an interface name nor a mapping with name and/or macaddress",
        )
    name = str(spec.get("name") or "")
    mac = str(spec.get("macaddress") or "").lower()
    if mac:
        owners = [ifname for ifname, ifmac in interfaces.items() if ifmac == mac]
        if not owners:
            return None, f"{label} macaddress {mac!r} is not on any interface of this host"
        if name and name not in owners:
            return (
                None,
                f"{label} macaddress {mac!r} belongs to {owners[0]!r}, not to the named interface {name!r}",
            )
        name = name or owners[0]
    elif name not in interfaces:
        known = ", ".join(sorted(interfaces)) or "none"
        return None, f"{label} interface {name!r} does not exist on this host (it has: {known})"
    return {"name": name, "macaddress": mac}, None


def port_errors(
    host: str,
    hosts: Sequence[str],
    topology: str,
    ports: Any,
    fabric_port: Any,
    interfaces: Mapping[str, str],
) -> list[str]:
    """Everything wrong with one host's port map, each message naming the bad value.

    A peer may be missing (no cable to it) or list several ports (one per cable); whether both ends list
    each cable is cabling.cables()'s check.
    """
    errors: list[str] = []
    if topology == "switched":
        if not fabric_port:
            return [f"{host}: mesh_network_fabric_port is not set (switched topology)"]
        return fabric_port_errors(host, [fabric_port], interfaces, single=True)
    if topology != "mesh":
        return [f"mesh_network_topology {topology!r} is neither 'mesh' nor 'switched'"]
    if not isinstance(ports, Mapping):
        return [f"{host}: mesh_network_ports {ports!r} is not a mapping of peer host to interface"]
    if not ports and len(hosts) > 1:
        errors.append(f"{host}: mesh_network_ports is empty: no cable joins {host} to any other node")
    used: dict[str, str] = {}
    for peer, value in ports.items():
        if peer == host:
            errors.append(f"{host}: mesh_network_ports names the host itself ({peer!r}) as a peer")
            continue
        if peer not in hosts:
            errors.append(f"{host}: mesh_network_ports names {peer!r}, which is not one of the mesh hosts")
            continue
        specs = cabling.port_specs(value)
        if not specs:
            errors.append(
                f"{host}: mesh_network_ports lists no port for peer {peer!r} (leave a peer out instead)"
            )
        for spec in specs:
            resolved, err = resolve_port(spec, interfaces, f"{host}: port for peer {peer!r}:")
            if err:
                errors.append(err)
                continue
            if resolved is None:  # resolve_port returns either a port or an error
                continue
            ifname = resolved["name"]
            if ifname in used:
                if used[ifname] == peer:
                    errors.append(f"{host}: interface {ifname!r} is listed twice for {peer!r}")
                else:
                    errors.append(
                        f"{host}: interface {ifname!r} is used for both {used[ifname]!r} and {peer!r}"
                    )
            used[ifname] = peer
    return errors


def port_entry(ifname: str, mac: str, mtu: int) -> dict[str, Any]:
    """A data port's netplan entry before its addresses and routes (networkd; matched by MAC when known)."""
    entry: dict[str, Any] = {"renderer": "networkd"}
    if mac:
        # Match by MAC so a renamed or re-enumerated NIC still gets its address.
        entry["match"] = {"macaddress": mac}
        entry["set-name"] = ifname
    entry.update({"mtu": mtu, "optional": True, "link-local": []})
    return entry


def fabric_port_label(host: str, rail: int, single: bool) -> str:
    """How messages name a fabric port: by the variable that lists it, and its rail when there are several."""
    return f"{host}: mesh_network_fabric_port" if single else f"{host}: mesh_network_fabric_ports rail{rail}"


def fabric_port_errors(
    host: str, specs: Sequence[Any], interfaces: Mapping[str, str], single: bool = False
) -> list[str]:
    """Each fabric port (in rail order) names an interface of this node; ``single``: the one
    mesh_network_fabric_port, named so."""
    errors = []
    for rail, spec in enumerate(specs):
        _port, err = resolve_port(spec, interfaces, fabric_port_label(host, rail, single))
        if err:
            errors.append(err)
    return errors


# --------------------------------------------------------------------------- MTU


MTU_MIN = 1280  # the IPv6 minimum link MTU: anything smaller on a data port is a typo
MTU_MAX = 9216  # the largest jumbo frame common switches carry


def mtu_errors(mtu: Any, name: str) -> list[str]:
    """The MTU rule: a whole number (written as digits) in MTU_MIN..MTU_MAX; ``name`` labels the value."""
    number = whole(mtu)
    if number is not None and MTU_MIN <= number <= MTU_MAX:
        return []
    shown = repr(str(mtu)) if isinstance(mtu, str) else repr(mtu)  # str(): a plain str, not a tagged subclass
    return [f"{name} {shown} must be an integer in {MTU_MIN}..{MTU_MAX}"]


def port_mtu_errors(host: str, mtu: Any, ip_link_details: Any, ports: Sequence[str]) -> list[str]:
    """The MTU against what each data port can carry: ``maxmtu`` of ``ip -d -j link`` (or ``ip -d -j addr``),
    checked before anything is applied (a veth or a NIC refuses a larger MTU only when it is set)."""
    try:
        links = json.loads(ip_link_details) if isinstance(ip_link_details, str) else ip_link_details
    except ValueError:
        return [f"{host}: `ip -d -j link` output is not JSON: {str(ip_link_details)[:80]!r}"]
    if not isinstance(links, list) or mtu_errors(mtu, "mtu"):
        return []  # the MTU's own rule, and the port checks, report those
    by_name = {str(link.get("ifname")): link for link in links if isinstance(link, Mapping)}
    errors = []
    for port in ports:
        largest = (by_name.get(port) or {}).get("max_mtu")
        if isinstance(largest, int) and int(mtu) > largest:
            errors.append(
                f"{host}: mesh_network_mtu {int(mtu)} is larger than port {port}'s maxmtu {largest} "
                "(`ip -d link show " + port + "`): lower mesh_network_mtu or use ports that carry it"
            )
    return errors
