# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lab's plan: names, addresses, MACs, mesh ports and link aliases of one instance. Pure.

Everything an instance creates on the host carries its prefix ``<lab>-`` (netns, links),
lives under ``<cache_dir>/<lab>/`` or ``<run_dir>/<lab>/`` (files, mounts) or under the
cgroup ``rdmaops-lab/<lab>/`` (processes), so teardown can find leftovers by prefix alone,
without trusting a state file that a crash may not have written. This file owns those names.
"""

from __future__ import annotations

import hashlib
import ipaddress
import re
from dataclasses import dataclass, field
from typing import Any

CGROUP_ROOT = "rdmaops-lab"
# No '-' in the name: '<lab>-' must be a prefix that no other instance's names can start with.
LAB_NAME_RE = re.compile(r"^[a-z][a-z0-9]{0,9}$")
NODE_PREFIX_RE = re.compile(r"^[a-z][a-z0-9]{0,11}$")
IFNAMSIZ = 15
MGMT_NODE_OFFSET = 10
MGMT_IFNAME = "mgmt0"
DATA_PORT_RE = re.compile(r"^data\d+$")
# mesh: a veth pair per node pair; ring / chain: node i's data1 to node i+1's data0 (ring: and the last node's
# data1 to the first's data0); rails: two nodes joined by two cables (data0-data0, data1-data1); switched: N
# ports per node (data0..), on one host bridge (fabric shared) or port k of every node on bridge k (rails).
TOPOLOGIES = ("mesh", "switched", "ring", "chain", "rails")
FABRICS = ("shared", "rails")
MAX_FABRIC_PORTS = 8
CABLED = ("mesh", "ring", "chain", "rails")
# Fewest nodes each cabled topology takes (a ring of 3 is a mesh cabled differently); rails takes exactly 2.
MIN_NODES = {"mesh": 1, "switched": 1, "ring": 3, "chain": 2, "rails": 2}
MAX_NODES = 32
# Switches (management port only: they play the fabric's switch over NETCONF) are numbered from here,
# so appending nodes never moves a switch's address.
SWITCH_INDEX_BASE = 100
MAX_SWITCHES = 4


class LabError(Exception):
    """A bad input or a host operation that failed; the message names the culprit."""


def check_lab_name(name: str) -> None:
    if not LAB_NAME_RE.match(name):
        raise LabError(
            f"lab name {name!r} is invalid: use 1-10 characters, a lowercase letter first, "
            "then lowercase letters or digits (no '-': it separates the instance prefix)"
        )


def node_names(prefix: str, count: int) -> list[str]:
    if not NODE_PREFIX_RE.match(prefix):
        raise LabError(f"node prefix {prefix!r} is invalid: use a lowercase letter, then letters or digits")
    if not 1 <= count <= MAX_NODES:
        raise LabError(f"node count {count} is out of range 1..{MAX_NODES}")
    return [f"{prefix}{i}" for i in range(1, count + 1)]


def netns_name(lab: str, node: str) -> str:
    return f"{lab}-{node}"


def mgmt_bridge(lab: str) -> str:
    return f"{lab}-mbr"


def fabric_bridge(lab: str, fabric: str = "shared", port: int = 0) -> str:
    """The host bridge of a switched lab's port PORT: one for all ports (shared), or one per rail; rail 0 and
    a shared fabric keep the single-port lab's name."""
    return f"{lab}-dbr" if fabric == "shared" or port == 0 else _ifname(f"{lab}-dbr{port}")


def mgmt_host_ifname(lab: str, index: int) -> str:
    return _ifname(f"{lab}-m{index}")


def fabric_host_ifname(lab: str, index: int, port: int = 0) -> str:
    """Host end of node INDEX's fabric port PORT: ``<lab>-d<index>``, then a letter for port 1.. (``b``,
    ``c``) so that a 10-character lab name and 32 nodes stay within the kernel's 15 characters."""
    return _ifname(f"{lab}-d{index}" + ("" if port == 0 else chr(ord("a") + port)))


def _ifname(name: str) -> str:
    if len(name) > IFNAMSIZ:
        raise LabError(f"interface name {name!r} is longer than the kernel's {IFNAMSIZ} characters")
    return name


def stable_mac(*parts: str) -> str:
    """A locally administered unicast MAC derived from the names: the same after every re-creation."""
    digest = bytearray(hashlib.sha256("/".join(parts).encode()).digest()[:6])
    digest[0] = (digest[0] & 0xFC) | 0x02
    return ":".join(f"{b:02x}" for b in digest)


def mesh_port(node_index: int, peer_index: int) -> str:
    """Port of node i towards peer j: ``data<j-1>`` below i, ``data<j-2>`` above.

    Ports towards existing peers never change when nodes are appended.
    """
    if node_index == peer_index or node_index < 1 or peer_index < 1:
        raise LabError(f"no mesh port between node indices {node_index} and {peer_index}")
    return f"data{peer_index - 1 if peer_index < node_index else peer_index - 2}"


@dataclass
class NodePlan:
    name: str
    index: int
    netns: str
    mgmt_ip: str
    mgmt_host_if: str
    mgmt_mac: str
    mgmt_host_mac: str
    # peer name -> local port, or list of ports for a peer joined by several cables (rails), or
    # {"fabric": "data0"} (switched)
    ports: dict[str, Any] = field(default_factory=dict)
    macs: dict[str, str] = field(default_factory=dict)
    role: str = "node"
    # a switch's ports in order, each [node, data port] it faces (a mesh lab's switch: [node, ""])
    faces: list[list[str]] = field(default_factory=list)


@dataclass
class MeshLink:
    a: str
    a_if: str
    b: str
    b_if: str


@dataclass
class LabPlan:
    lab: str
    topology: str
    mgmt_cidr: str
    mgmt_host_ip: str
    prefixlen: int
    nodes: list[NodePlan]
    links: list[MeshLink]
    fabric_ports: int = 1
    fabric: str = "shared"

    def fabric_bridges(self) -> list[str]:
        """The switched fabric's bridge of each port, in port order (one name for all when shared)."""
        if self.topology != "switched":
            return []
        return [fabric_bridge(self.lab, self.fabric, k) for k in range(self.fabric_ports)]

    def as_dict(self) -> dict[str, Any]:
        return {
            "lab": self.lab,
            "topology": self.topology,
            "mgmt_cidr": self.mgmt_cidr,
            "mgmt_host_ip": self.mgmt_host_ip,
            "prefixlen": self.prefixlen,
            "mgmt_bridge": mgmt_bridge(self.lab),
            "fabric_bridge": fabric_bridge(self.lab) if self.topology == "switched" else None,
            "fabric_bridges": self.fabric_bridges(),
            "fabric_ports": self.fabric_ports,
            "fabric": self.fabric,
            "cabled": self.topology in CABLED,
            "nodes": [vars(n) for n in self.nodes],
            "links": [vars(link) for link in self.links],
        }


def make_plan(
    lab: str,
    nodes: list[str],
    topology: str,
    mgmt_cidr: str,
    switches: list[str] | None = None,
    fabric_ports: int = 1,
    fabric: str = "shared",
) -> LabPlan:
    check_lab_name(lab)
    if fabric not in FABRICS:
        raise LabError(f"fabric {fabric!r} is not one of {', '.join(FABRICS)}")
    if not 1 <= fabric_ports <= MAX_FABRIC_PORTS:
        raise LabError(f"fabric port count {fabric_ports} is out of range 1..{MAX_FABRIC_PORTS}")
    if topology != "switched" and (fabric_ports, fabric) != (1, "shared"):
        raise LabError(
            f"fabric ports and rails are for a switched lab; topology {topology} has its own cables"
        )
    if topology == "switched" and fabric == "rails" and len(switches or []) > fabric_ports:
        raise LabError(
            f"{len(switches or [])} switches for {fabric_ports} rails: one switch per rail at the most"
        )
    switches = list(switches or [])
    for sw in switches:
        if not NODE_PREFIX_RE.match(sw):
            raise LabError(f"switch name {sw!r} is invalid: use a lowercase letter, then letters or digits")
    if len(switches) > MAX_SWITCHES:
        raise LabError(f"switch count {len(switches)} is out of range 0..{MAX_SWITCHES}")
    if len(set(nodes + switches)) != len(nodes) + len(switches):
        raise LabError(f"node and switch names are not unique: {nodes + switches}")
    if topology not in TOPOLOGIES:
        raise LabError(f"topology {topology!r} is not one of {', '.join(TOPOLOGIES)}")
    if len(set(nodes)) != len(nodes):
        raise LabError(f"node names are not unique: {nodes}")
    if not 1 <= len(nodes) <= MAX_NODES:
        raise LabError(f"node count {len(nodes)} is out of range 1..{MAX_NODES}")
    if len(nodes) < MIN_NODES[topology] or (topology == "rails" and len(nodes) != 2):
        wanted = "exactly 2" if topology == "rails" else f"at least {MIN_NODES[topology]}"
        raise LabError(f"topology {topology} takes {wanted} nodes, not {len(nodes)}")
    try:
        net = ipaddress.IPv4Network(mgmt_cidr, strict=True)
    except ValueError as exc:
        raise LabError(f"management CIDR {mgmt_cidr!r} is not an IPv4 network: {exc}") from exc
    if net.num_addresses - 2 < MGMT_NODE_OFFSET + len(nodes):
        raise LabError(
            f"management CIDR {mgmt_cidr} has no room for {len(nodes)} nodes at .{MGMT_NODE_OFFSET + 1}+"
        )
    if switches and net.num_addresses - 2 < MGMT_NODE_OFFSET + SWITCH_INDEX_BASE + len(switches):
        first = MGMT_NODE_OFFSET + SWITCH_INDEX_BASE + 1
        raise LabError(f"management CIDR {mgmt_cidr} has no room for switches at .{first}+")
    host_ip = str(net.network_address + 1)

    def member(name: str, index: int, role: str) -> NodePlan:
        return NodePlan(
            name=name,
            index=index,
            netns=netns_name(lab, name),
            mgmt_ip=str(net.network_address + MGMT_NODE_OFFSET + index),
            mgmt_host_if=mgmt_host_ifname(lab, index),
            mgmt_mac=stable_mac(lab, name, MGMT_IFNAME),
            mgmt_host_mac=stable_mac(lab, name, "host", MGMT_IFNAME),
            role=role,
        )

    plans = [member(node, i, "node") for i, node in enumerate(nodes, start=1)]
    links: list[MeshLink] = cabling(plans, topology)
    if topology in CABLED:
        for link in links:
            for here, there, port in ((link.a, link.b, link.a_if), (link.b, link.a, link.b_if)):
                node = plans[nodes.index(here)]
                if there in node.ports:
                    # A second cable to the same peer: the peer's ports become a list, in cable order.
                    have = node.ports[there]
                    node.ports[there] = [*(have if isinstance(have, list) else [have]), port]
                else:
                    node.ports[there] = port
        for p in plans:
            p.macs = {
                ifname: stable_mac(lab, p.name, ifname)
                for value in p.ports.values()
                for ifname in (value if isinstance(value, list) else [value])
            }
    else:
        ports = [f"data{k}" for k in range(fabric_ports)]
        for p in plans:
            p.ports = {"fabric": ports[0] if fabric_ports == 1 else list(ports)}
            p.macs = {port: stable_mac(lab, p.name, port) for port in ports}
    cluster = list(plans)
    plans += [member(sw, SWITCH_INDEX_BASE + k, "switch") for k, sw in enumerate(switches, start=1)]
    for k, sw_plan in enumerate(plans[len(cluster) :]):
        sw_plan.faces = switch_faces(cluster, topology, fabric_ports, fabric, k)
    return LabPlan(lab, topology, str(net), host_ip, net.prefixlen, plans, links, fabric_ports, fabric)


def switch_faces(cluster: list[NodePlan], topology: str, ports: int, fabric: str, k: int) -> list[list[str]]:
    """What switch K's ports face, in order: on a rails fabric, rail K's port of every node; on a shared
    fabric every port of every node; in a cabled lab (its switch a QoS stand-in beside direct cables) one port
    per node."""
    if topology != "switched":
        return [[node.name, ""] for node in cluster]
    if fabric == "rails":
        return [[node.name, f"data{k}"] for node in cluster]
    return [[node.name, f"data{port}"] for node in cluster for port in range(ports)]


def cabling(plans: list[NodePlan], topology: str) -> list[MeshLink]:
    """The veth pairs of a cabled topology, each with its lower-numbered node as ``a``."""
    links: list[MeshLink] = []
    if topology == "mesh":
        for a in plans:
            for b in plans:
                if a.index < b.index:
                    links.append(
                        MeshLink(a.name, mesh_port(a.index, b.index), b.name, mesh_port(b.index, a.index))
                    )
    elif topology in ("ring", "chain"):
        # Every node faces the previous one on data0 and the next one on data1: the cabling of two-port nodes.
        for k in range(len(plans) - 1):
            links.append(MeshLink(plans[k].name, "data1", plans[k + 1].name, "data0"))
        if topology == "ring":
            links.append(MeshLink(plans[0].name, "data0", plans[-1].name, "data1"))
    elif topology == "rails":
        a, b = plans
        links += [MeshLink(a.name, "data0", b.name, "data0"), MeshLink(a.name, "data1", b.name, "data1")]
    return links


def mesh_alias(lab: str, link: MeshLink) -> str:
    return f"{lab}:mesh:{link.a}:{link.a_if}-{link.b}:{link.b_if}"


def fabric_alias(lab: str, node: str, port: str = "data0") -> str:
    return f"{lab}:fabric:{node}:{port}"


def mgmt_alias(lab: str, node: str) -> str:
    return f"{lab}:mgmt:{node}"


def node_of_host_link(lab: str, link: dict[str, Any]) -> str | None:
    """The node a host-side link belongs to, from the alias written when it was made."""
    parts = str(link.get("ifalias", "")).split(":")
    if len(parts) >= 3 and parts[0] == lab and parts[1] in ("mgmt", "fabric"):
        return parts[2]
    return None


def cidr_conflicts(lab: str, mgmt_cidr: str, addresses: list[dict[str, Any]]) -> list[str]:
    """Host interfaces other than the instance's own bridge with an address in its management CIDR.

    ``addresses`` is ``ip -j -4 addr show``'s output: another lab instance or a real network there would
    take the nodes' traffic or lose its own.
    """
    net = ipaddress.IPv4Network(mgmt_cidr)
    own = mgmt_bridge(lab)
    out = []
    for entry in addresses:
        for addr in entry.get("addr_info", []):
            if addr.get("family", "inet") != "inet":
                continue
            iface = ipaddress.IPv4Interface(f"{addr['local']}/{addr['prefixlen']}")
            if entry.get("ifname") != own and iface.network.overlaps(net):
                out.append(
                    f"management CIDR {net} overlaps {iface} on host interface {entry.get('ifname')}"
                    " (another lab instance or a real network): choose another lab_mgmt_cidr"
                )
    return out
