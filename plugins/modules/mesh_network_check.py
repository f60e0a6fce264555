#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: mesh_network_check
short_description: Check a node's data-network inventory and plan its addresses, cables and routes
version_added: "0.1.0"
description:
  - The check phase of the rdmaops.cluster.mesh_network role, on the controller (an action plugin); it changes
    nothing anywhere and gives the same answer in check mode.
  - "Refuses, in one message naming every bad value: a host list with duplicates or without this host, an MTU
    outside 1280..9216, pools that do not parse or overlap each other or the management network, pools too
    small for the cables, ports that do not exist or face two peers, a cable listed by one end only or with a
    different count of cables at the two ends, a cabling that is not connected, a data port that carries the
    address Ansible connects to, the default route or a management address, two inventory names for one node,
    and a change of addresses in use without O(renumber)."
  - Otherwise returns the node's plan. Cables come from every node's port map (O(all_ports)); a peer may be
    missing (no cable) or listed with several ports (one per cable, in the same order at both ends). A pair's
    first cable keeps the subnet a full mesh gives it (pair index), further cables take subnets from the top
    of the pool; addresses in use (O(nodes)) are kept. The node address of every other node is routed along a
    shortest path over the cables; nodes that others' traffic crosses forward it on their data ports.
author:
  - Rdmaops Developers (@rdmaops)
options:
  host:
    description: The node checked (inventory name).
    type: str
    required: true
  hosts:
    description: Every node of the data network, in numbering order (C(mesh_network_hosts)).
    type: raw
    required: true
  topology:
    description: C(mesh) (direct cables in any shape) or C(switched).
    type: str
    required: true
    choices: [mesh, switched]
  ports:
    description: This node's C(mesh_network_ports), peer to port or list of ports.
    type: raw
    default: {}
  all_ports:
    description: Every node's C(mesh_network_ports) (the cabling); this node's entry is replaced by O(ports).
    type: dict
    default: {}
  fabric_port:
    description: Switched, the port facing the switch.
    type: raw
    default: ""
  mgmt_cidr:
    description: The management network.
    type: raw
    required: true
  link_pool:
    description: Pool of the cable subnets.
    type: raw
    required: true
  link_prefix:
    description: Prefix length of each cable subnet.
    type: raw
    required: true
  node_pool:
    description: Pool of the /32 node addresses.
    type: raw
    required: true
  fabric_subnet:
    description: Subnet of a switched fabric.
    type: raw
    required: true
  mtu:
    description: MTU of the data ports.
    type: raw
    required: true
  nodeaddr_ifname:
    description: Name of the empty bridge that holds the node address.
    type: str
    required: true
  renumber:
    description: Renumber from the list positions even where that moves addresses in use.
    type: bool
    default: false
  nodes:
    description:
      - What each node of the play reported, by inventory name, each with C(addr) (C(ip -j addr show)),
        C(route) (C(ip -j route show default)), C(netplan) (the role's netplan file as data, or null),
        C(netplan_text) (the same file as text) and C(connect) (the addresses Ansible reaches it at).
    type: dict
    required: true
  apply_targets:
    description: Addresses (the controller, gateways) that must keep answering after the apply.
    type: list
    elements: str
    default: []
extends_documentation_fragment:
  - rdmaops.cluster.phase
notes:
  - The rules are plain functions in C(plugins/module_utils/mesh/) (check, cabling, addressing, data_ports,
    host_plan, reachability, safety).
"""

EXAMPLES = r"""
- name: Check the data-network inventory and plan this node
  rdmaops.cluster.mesh_network_check:
    host: "{{ inventory_hostname }}"
    hosts: "{{ mesh_network_hosts }}"
    topology: mesh
    ports: "{{ mesh_network_ports }}"
    all_ports: "{{ dict(mesh_network_hosts | zip(mesh_network_hosts | map('extract', hostvars)
                   | map(attribute='mesh_network_ports', default={}))) }}"
    mgmt_cidr: 10.0.0.0/24
    link_pool: 192.168.100.0/22
    link_prefix: 30
    node_pool: 10.255.0.0/24
    fabric_subnet: 192.168.200.0/24
    mtu: 9000
    nodeaddr_ifname: nodeaddr0
    nodes: "{{ dict(ansible_play_hosts | zip(ansible_play_hosts
               | map('extract', hostvars, 'mesh_network_node_facts'))) }}"
  register: mesh_network_checked
"""

RETURN = r"""
errors:
  description: Every refusal, each naming its bad value (empty when the plan was made).
  returned: always
  type: list
  elements: str
plan:
  description:
    - This node's plan (empty on refusal) with C(node_address), C(socket_ifname), C(links) (one per cable
      with C(peer), C(k), C(ifname), C(macaddress), C(peer_port), C(cable), C(subnet), C(prefix), C(address),
      C(peer_address), C(peer_node_address) and C(routes), the nodes routed over it), C(peers) (node
      addresses), C(hops), C(paths), C(forwarding) (ports that forward between other nodes), C(fabric)
      (switched), C(netplan) (the document), C(expected_addresses), C(path_checks), C(apply_targets),
      C(renumbering), C(layout), C(mgmt_identity) and C(cabling).
    - C(cabling) (mesh) holds C(shape) (full_mesh, ring, chain or partial), C(order) (the nodes along the
      ring or chain, for rank order), C(link_prefix), C(max_cables) (cables of the most cabled pair),
      C(cables), C(transit), C(non_neighbours), C(max_hops) and C(device_index_problems) (pairs NCCL's
      built-in subnet-aware routing cannot connect on some device index).
  returned: always
  type: dict
"""

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh.check import MESH_NETWORK_CHECK_SPEC
from ansible_collections.rdmaops.cluster.plugins.module_utils.phase_module import refuse_without_action


def main() -> None:
    refuse_without_action("mesh_network_check", MESH_NETWORK_CHECK_SPEC)


if __name__ == "__main__":
    main()
