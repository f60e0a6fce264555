#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: mesh_network_check
short_description: Check one node against what it reported, and take its part of the data network's plan
version_added: "0.1.0"
description:
  - The per-node phase of the rdmaops.cluster.mesh_network role, on the controller (an action plugin), after
    the cluster phase (rdmaops.cluster.mesh_network_plan, once per run) checked the inventory across nodes and
    planned every node; it changes nothing anywhere and gives the same answer in check mode.
  - "Refuses, in one message naming every bad value: a node outside the host list, ports that do not exist
    (by name or MAC) or face two peers, an MTU larger than a data port carries, and a data port (a mesh port,
    or any rail's fabric port) that carries the address Ansible connects to, the default route or a
    management address."
  - Otherwise returns the node's plan - its part of the cluster's plan (O(part)) with its ports resolved, the
    netplan document (a mesh's cables and routes; a switched fabric's ports, each NIC's routing table and
    source rule where the scheme has them), the sysctls (forwarding where other nodes' traffic crosses it;
    C(arp_ignore), C(arp_announce), C(rp_filter) on each fabric port of a node with several; with backup
    routes also loose reverse-path filtering and C(ignore_routes_with_linkdown), in a ring C(accept_local)),
    C(networkd_dropin) (C(path) and C(content), empty without a ring's transit rules, which netplan
    cannot write as it has no incoming-interface rules), the paths to probe after the apply and in verify.
author:
  - Rdmaops Developers (@rdmaops)
options:
  host:
    description: The node checked (inventory name).
    type: str
    required: true
  ports:
    description: Mesh, this node's C(mesh_network_ports), peer to port or list of ports.
    type: raw
    default: {}
  fabric_ports:
    description: Switched, this node's C(mesh_network_fabric_ports), its ports in rail order.
    type: raw
    default: []
  fabric_port:
    description: Switched, this node's C(mesh_network_fabric_port) (used when O(fabric_ports) is empty).
    type: raw
    default: ""
  node:
    description:
      - What this node reported - C(addr) (C(ip -d -j addr show)), C(route) (C(ip -j route show default)) and
        C(connect) (the addresses Ansible reaches it at).
    type: dict
    required: true
  part:
    description: This node's entry of the cluster plan's C(nodes) (rdmaops.cluster.mesh_network_plan).
    type: dict
    required: true
  shared:
    description: The cluster plan's C(shared) (hosts, peers, fabric, layout, renumbering).
    type: dict
    required: true
  apply_targets:
    description: Addresses (the controller, gateways) that must keep answering after the apply.
    type: list
    elements: str
    default: []
extends_documentation_fragment:
  - rdmaops.cluster.phase
  - rdmaops.cluster.mesh_network
notes:
  - The rules are plain functions in C(plugins/module_utils/mesh/) (check, data_ports, safety, host_plan,
    fabric_plan, reachability).
"""

EXAMPLES = r"""
- name: Check this node against what it reported and take its plan
  rdmaops.cluster.mesh_network_check:
    host: "{{ inventory_hostname }}"
    topology: "{{ mesh_network_topology }}"
    ports: "{{ mesh_network_ports }}"
    fabric_ports: "{{ mesh_network_fabric_ports }}"
    fabric_port: "{{ mesh_network_fabric_port }}"
    mgmt_cidr: 10.0.0.0/24
    mtu: 9000
    nodeaddr_ifname: nodeaddr0
    node: "{{ mesh_network_node_facts }}"
    part: "{{ mesh_network_cluster.plan.nodes[inventory_hostname] }}"
    shared: "{{ mesh_network_cluster.plan.shared }}"
  register: mesh_network_checked
"""

RETURN = r"""
errors:
  description: Every refusal of this node against what it reported, each naming its bad value (empty when its
    plan was made).
  returned: always
  type: list
  elements: str
plan:
  description:
    - This node's plan (empty on refusal) with C(node_address) (a mesh node's /32; switched - its rail 0
      address), C(socket_ifname) (the node-address bridge; switched - the fabric ports, comma-joined),
      C(links) (mesh - one per cable with C(peer), C(k), C(ifname), C(macaddress), C(peer_port), C(cable),
      C(subnet), C(prefix), C(address), C(peer_address), C(peer_node_address) and C(routes), the nodes routed
      over it), C(fabric) (switched - rail 0 as one port), C(rails) (switched - one per rail with C(rail),
      C(name), C(ifname), C(macaddress), C(mac) (the NIC's own, as the node reported it), C(address),
      C(prefix), C(subnet), C(table), C(gateway)), C(rail_peers) (several rails - each peer's address on
      every rail), C(rail_peer_nics) (several rails - each peer's NIC on every rail, C(ifname) and C(mac),
      null where the peer was not read), C(peers), C(hops), C(paths), C(forwarding), C(sysctl) (C(name),
      C(value)), C(netplan) (the document), C(expected_addresses), C(path_checks) (with several rails also
      one C(arp) check per peer NIC), C(apply_targets), C(renumbering), C(layout) and C(mgmt_identity).
  returned: always
  type: dict
"""

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh.phase import MESH_NETWORK_CHECK_SPEC
from ansible_collections.rdmaops.cluster.plugins.module_utils.phase_module import refuse_without_action


def main() -> None:
    refuse_without_action("mesh_network_check", MESH_NETWORK_CHECK_SPEC)


if __name__ == "__main__":
    main()
