# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Wiring of a lab instance: makes the host's netns, bridges and veths match a LabPlan."""

from __future__ import annotations

from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.lab.host import Host
from ansible_collections.rdmaops.cluster.plugins.module_utils.lab.plan import (
    DATA_PORT_RE,
    FABRICS,
    MGMT_IFNAME,
    TOPOLOGIES,
    LabError,
    LabPlan,
    NodePlan,
    cidr_conflicts,
    fabric_alias,
    fabric_host_ifname,
    mesh_alias,
    mgmt_alias,
    mgmt_bridge,
    stable_mac,
)

# The options of module rdmaops.cluster.lab_fabric, which wires a plan from them.
LAB_FABRIC_SPEC: dict[str, Any] = {
    "name": {"type": "str", "required": True},
    "nodes": {"type": "list", "elements": "str", "required": True},
    "switches": {"type": "list", "elements": "str", "default": []},
    "topology": {"type": "str", "choices": list(TOPOLOGIES), "default": "mesh"},
    "fabric_ports": {"type": "int", "default": 1},
    "fabric": {"type": "str", "choices": list(FABRICS), "default": "shared"},
    "mgmt_cidr": {"type": "str", "default": "10.99.0.0/24"},
    "fabric_mtu": {"type": "int", "default": 9000},
}


def _is_up(link: dict[str, Any]) -> bool:
    return "UP" in link.get("flags", [])


class Fabric:
    """Makes the host's links, bridges and namespaces match a LabPlan; changes only what differs."""

    def __init__(self, host: Host, plan: LabPlan, fabric_mtu: int) -> None:
        self.host = host
        self.plan = plan
        self.fabric_mtu = fabric_mtu

    def check_cidr_free(self) -> None:
        """Fail when another interface (another instance, a real network) has an address in the CIDR."""
        addresses = self.host.ip_json(["-4", "addr", "show"])
        conflicts = cidr_conflicts(self.plan.lab, self.plan.mgmt_cidr, addresses)
        if conflicts:
            raise LabError(conflicts[0])

    def apply(self) -> None:
        h, plan = self.host, self.plan
        self.check_cidr_free()
        wanted_host = {mgmt_bridge(plan.lab)} | {n.mgmt_host_if for n in plan.nodes}
        if plan.topology == "switched":
            wanted_host |= set(plan.fabric_bridges()) | {
                fabric_host_ifname(plan.lab, n.index, k)
                for n in plan.nodes
                if n.role == "node"
                for k in range(plan.fabric_ports)
            }
        # Leftovers of another topology or of removed nodes go first, so names can be reused.
        for name in h.own_host_links():
            if name not in wanted_host:
                h.delete_link(name)
        self._bridge(mgmt_bridge(plan.lab), f"{plan.mgmt_host_ip}/{plan.prefixlen}", None)
        for bridge in dict.fromkeys(plan.fabric_bridges()):
            self._bridge(bridge, None, self.fabric_mtu)
        present = set(h.netns_list())
        for node in plan.nodes:
            if node.netns not in present:
                h.change(f"add netns {node.netns}", ["ip", "netns", "add", node.netns])
            self._up("lo", node.netns)
            self._mgmt(node)
        self._data_ports()

    def _links(self, netns: str | None) -> dict[str, dict[str, Any]]:
        if netns and self.host.check_mode and netns not in self.host.netns_list():
            return {}
        return self.host.links(netns)

    def _up(self, ifname: str, netns: str | None) -> None:
        link = self._links(netns).get(ifname)
        if link is None or not _is_up(link):
            argv = ["ip"] + (["-n", netns] if netns else []) + ["link", "set", "dev", ifname, "up"]
            self.host.change(f"set {ifname} up" + (f" in {netns}" if netns else ""), argv)

    def _bridge(self, name: str, address: str | None, mtu: int | None) -> None:
        h = self.host
        link = h.links().get(name)
        if link is None:
            h.change(
                f"add bridge {name}",
                ["ip", "link", "add", name, "address", stable_mac(self.plan.lab, name), "type", "bridge"],
            )
        if mtu is not None and (link is None or link.get("mtu") != mtu):
            h.change(f"set {name} mtu {mtu}", ["ip", "link", "set", "dev", name, "mtu", str(mtu)])
        if address is not None:
            have = set()
            if link is not None:
                for entry in h.ip_json(["addr", "show", "dev", name]):
                    have |= {f"{a['local']}/{a['prefixlen']}" for a in entry.get("addr_info", [])}
            if address not in have:
                h.change(f"add {address} to {name}", ["ip", "addr", "add", address, "dev", name])
        self._up(name, None)

    def _veth_ok(
        self, a: dict[str, Any] | None, b: dict[str, Any] | None, alias: str, macs: tuple[str, str]
    ) -> bool:
        return (
            a is not None
            and b is not None
            and a.get("ifalias") == alias
            and b.get("ifalias") == alias
            and (a.get("address"), b.get("address")) == macs
        )

    def _host_veth(
        self, ends: tuple[str, str, str, str, str], alias: str, bridge: str, mtu: int | None = None
    ) -> None:
        """A veth pair from the host (its end HOST_IF, HOST_MAC on BRIDGE) into a node (NETNS: IFNAME, MAC),
        named by ALIAS; remade when either end is missing or not as planned, then attached, sized and up.
        ENDS: (host_if, host_mac, netns, ifname, mac)."""
        h = self.host
        host_if, host_mac, netns, ifname, mac = ends
        hl = h.links().get(host_if)
        nl = self._links(netns).get(ifname)
        if not self._veth_ok(hl, nl, alias, (host_mac, mac)):
            if hl is not None:
                h.delete_link(host_if)
            if nl is not None and ifname in self._links(netns):
                h.delete_link(ifname, netns)
            host_end = [host_if, "address", host_mac, *(["mtu", str(mtu)] if mtu is not None else [])]
            node_end = [ifname, "address", mac, "netns", netns]
            h.change(
                f"add veth {host_if} <-> {netns}:{ifname}",
                ["ip", "link", "add", *host_end, "type", "veth", "peer", "name", *node_end],
            )
            if not h.check_mode:
                h.run(["ip", "link", "set", "dev", host_if, "alias", alias])
                h.run(["ip", "-n", netns, "link", "set", "dev", ifname, "alias", alias])
            hl = None
        if hl is None or hl.get("master") != bridge:
            h.change(f"attach {host_if} to {bridge}", ["ip", "link", "set", "dev", host_if, "master", bridge])
        if mtu is not None and hl is not None and hl.get("mtu") != mtu:
            h.change(f"set {host_if} mtu", ["ip", "link", "set", "dev", host_if, "mtu", str(mtu)])
        self._up(host_if, None)
        self._up(ifname, netns)

    def _mgmt(self, node: NodePlan) -> None:
        h, lab = self.host, self.plan.lab
        ends = (node.mgmt_host_if, node.mgmt_host_mac, node.netns, MGMT_IFNAME, node.mgmt_mac)
        self._host_veth(ends, mgmt_alias(lab, node.name), mgmt_bridge(lab))
        address = f"{node.mgmt_ip}/{self.plan.prefixlen}"
        have: set[str] = set()
        if not (h.check_mode and node.netns not in h.netns_list()):
            for entry in h.ip_json(["addr", "show", "dev", MGMT_IFNAME], node.netns):
                have |= {f"{a['local']}/{a['prefixlen']}" for a in entry.get("addr_info", [])}
        if address not in have:
            h.change(
                f"add {address} to {node.netns}:{MGMT_IFNAME}",
                ["ip", "-n", node.netns, "addr", "add", address, "dev", MGMT_IFNAME],
            )

    def _data_ports(self) -> None:
        h, plan = self.host, self.plan
        by_name = {n.name: n for n in plan.nodes}
        links = {n.netns: self._links(n.netns) for n in plan.nodes}
        wanted = {n.netns: set(n.macs) for n in plan.nodes}
        for ns, ports in links.items():
            for ifname in ports:
                if DATA_PORT_RE.match(ifname) and ifname not in wanted[ns]:
                    h.delete_link(ifname, ns)
        if plan.topology != "switched":
            for link in plan.links:
                a, b = by_name[link.a], by_name[link.b]
                alias = mesh_alias(plan.lab, link)
                la = self._links(a.netns).get(link.a_if)
                lb = self._links(b.netns).get(link.b_if)
                if not self._veth_ok(la, lb, alias, (a.macs[link.a_if], b.macs[link.b_if])):
                    if la is not None and link.a_if in self._links(a.netns):
                        h.delete_link(link.a_if, a.netns)
                    if lb is not None and link.b_if in self._links(b.netns):
                        h.delete_link(link.b_if, b.netns)
                    h.change(
                        f"add veth {a.netns}:{link.a_if} <-> {b.netns}:{link.b_if}",
                        [
                            "ip",
                            "-n",
                            a.netns,
                            "link",
                            "add",
                            link.a_if,
                            "address",
                            a.macs[link.a_if],
                            "type",
                            "veth",
                            "peer",
                            "name",
                            link.b_if,
                            "address",
                            b.macs[link.b_if],
                            "netns",
                            b.netns,
                        ],
                    )
                    if not h.check_mode:
                        h.run(["ip", "-n", a.netns, "link", "set", "dev", link.a_if, "alias", alias])
                        h.run(["ip", "-n", b.netns, "link", "set", "dev", link.b_if, "alias", alias])
                self._up(link.a_if, a.netns)
                self._up(link.b_if, b.netns)
            return
        for node in plan.nodes:
            if node.role != "node":
                continue
            for k, bridge in enumerate(plan.fabric_bridges()):
                self._fabric_port(node, f"data{k}", fabric_host_ifname(plan.lab, node.index, k), bridge)

    def _fabric_port(self, node: NodePlan, port: str, host_if: str, bridge: str) -> None:
        """Node NODE's fabric port PORT, its host end HOST_IF on BRIDGE, at the fabric's MTU."""
        lab = self.plan.lab
        ends = (host_if, stable_mac(lab, node.name, "host", port), node.netns, port, node.macs[port])
        self._host_veth(ends, fabric_alias(lab, node.name, port), bridge, self.fabric_mtu)
