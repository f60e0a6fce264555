#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: mesh_network_plan
short_description: Check the data network's inventory across nodes and plan every node, once per run
version_added: "0.2.0"
description:
  - The cluster phase of the rdmaops.cluster.mesh_network role, on the controller (an action plugin, run once
    per run); it changes nothing anywhere and gives the same answer in check mode. Each node's own check
    (rdmaops.cluster.mesh_network_check) then takes its part of the plan.
  - "Refuses, in one message naming every bad value: a host list with duplicates, an MTU outside 1280..9216,
    two inventory names for one node (one management address or MAC), and - in a mesh - pools that do not
    parse or overlap each other or the management network, pools too small for the cables, a cable listed by
    one end only or with a different count of cables at the two ends, a cabling that is not connected, and a
    change of addresses in use without O(renumber)."
  - "Switched: every node lists one port per rail in rail order (a node with fewer ports names the rails it
    lacks, one with more the rails no other node has), no port twice on a node, no node listing the others'
    port names in another order, no MAC on two nodes; the scheme's subnets parse, overlap neither each other
    nor the management network nor O(node_pool), and hold every node (shared - every NIC; leaf31 - a /31 per
    NIC); the routing tables avoid the kernel's own."
  - Otherwise numbers every node once - a mesh's cables (a pair's first cable by the pair's position, further
    cables from the top of the pool, addresses in use kept), node addresses and shortest-path routes; a
    switched fabric's addresses per scheme (shared - NIC i of node k at host k x rails + i + 1 of
    O(fabric_subnet); rails - host k + 1 of rail i's subnet; leaf31 - /31 number k x rails + i of
    O(leaf_pool), the leaf the first address).
author:
  - Rdmaops Developers (@rdmaops)
options:
  hosts:
    description: Every node of the data network, in numbering order (C(mesh_network_hosts)).
    type: raw
    required: true
  ports:
    description: Mesh, every node's C(mesh_network_ports) (the cabling), replaced by what each node of
      O(nodes) had in effect.
    type: dict
    default: {}
  fabric_ports:
    description: Switched, every node's C(mesh_network_fabric_ports) (its ports in rail order), replaced by
      what each node of O(nodes) had in effect.
    type: dict
    default: {}
  fabric_port:
    description: Switched, every node's C(mesh_network_fabric_port) (rail 0 when O(fabric_ports) is empty).
    type: dict
    default: {}
  link_pool:
    description: Pool of the cable subnets.
    type: raw
    required: true
  link_prefix:
    description: Prefix length of each cable subnet.
    type: raw
    required: true
  node_pool:
    description: Pool of the /32 node addresses; no fabric subnet may overlap it.
    type: raw
    required: true
  fabric_subnet:
    description: Subnet of a switched fabric (scheme C(shared)).
    type: raw
    required: true
  fabric_scheme:
    description: C(auto) (C(shared) for one port per node, C(rails) for several), C(shared), C(rails) or
      C(leaf31).
    type: raw
    required: true
  fabric_table_base:
    description: First routing table of the per-NIC tables (C(shared) with several NICs, C(leaf31)); rail i
      takes table base + i, and its source rule that priority.
    type: raw
    required: true
  rail_subnets:
    description: Scheme C(rails), one subnet per rail in rail order; empty - carved from O(rail_pool).
    type: raw
    required: true
  rail_pool:
    description: Scheme C(rails), the pool rail i's subnet is the i-th O(rail_prefix) subnet of.
    type: raw
    required: true
  rail_prefix:
    description: Scheme C(rails), the prefix length of each rail's subnet carved from O(rail_pool).
    type: raw
    required: true
  leaf_pool:
    description: Scheme C(leaf31), the pool of the /31s between each NIC and its leaf switch.
    type: raw
    required: true
  leaf_routes:
    description: Scheme C(leaf31), the destinations each NIC's table routes via its leaf (empty -
      O(leaf_pool)).
    type: raw
    required: true
  renumber:
    description: Renumber from the list positions even where that moves addresses in use.
    type: bool
    default: false
  nodes:
    description:
      - What each node of the play reported, by inventory name, each with C(addr) (C(ip -j addr show)),
        C(route) (C(ip -j route show default)), C(netplan) (the role's netplan file as data, or null),
        C(netplan_text) (the same file as text), C(connect) (the addresses Ansible reaches it at), and the
        settings in effect on it - C(ports), C(fabric_ports), C(fabric_port).
    type: dict
    required: true
  play_hosts:
    description:
      - Every host of the play, those that were unreachable or failed earlier too (C(ansible_play_hosts_all)).
        A host of O(hosts) in this list without an entry in O(nodes) could not be reached - refused, naming
        it, unless O(allow_unreachable).
    type: list
    elements: str
    default: []
  allow_unreachable:
    description: Plan without the hosts that could not be reached (their ends of the cables keep what they
      have).
    type: bool
    default: false
  backup_routes:
    description: A full mesh of 3+ nodes or a ring - plan a second route to every node address over another
      neighbour (metric 100), with the sysctls it needs (and in a ring the transit tables and their rules).
    type: bool
    default: true
extends_documentation_fragment:
  - rdmaops.cluster.phase
  - rdmaops.cluster.mesh_network
notes:
  - The rules are plain functions in C(plugins/module_utils/mesh/) (cluster, cabling, addressing, fabric,
    fabric_plan, host_plan, safety); the work is done once per run, so each node's check stays linear in the
    cluster's size.
"""

EXAMPLES = r"""
- name: Check the inventory across nodes and plan every node, once
  run_once: true
  register: mesh_network_cluster
  rdmaops.cluster.mesh_network_plan:
    hosts: "{{ mesh_network_hosts }}"
    topology: switched
    fabric_ports: "{{ dict(mesh_network_hosts | zip(mesh_network_hosts | map('extract', hostvars)
                      | map(attribute='mesh_network_fabric_ports', default=[]))) }}"
    mgmt_cidr: 10.0.0.0/24
    link_pool: 192.168.100.0/22
    link_prefix: 30
    node_pool: 10.255.0.0/24
    fabric_subnet: 192.168.200.0/24
    fabric_scheme: rails
    fabric_table_base: 100
    rail_subnets: []
    rail_pool: 192.168.192.0/20
    rail_prefix: 24
    leaf_pool: 10.200.0.0/16
    leaf_routes: [10.200.0.0/16]
    mtu: 9000
    nodeaddr_ifname: nodeaddr0
    nodes: "{{ dict(ansible_play_hosts | zip(ansible_play_hosts
               | map('extract', hostvars, 'mesh_network_node_facts'))) }}"
"""

RETURN = r"""
errors:
  description: Every refusal across the nodes, each naming its node and bad value (empty when every node was
    planned).
  returned: always
  type: list
  elements: str
plan:
  description:
    - The cluster's plan (empty on refusal) - C(nodes) (each node's part, by inventory name - a mesh node's
      cables with its own port as the inventory gives it, the node addresses routed over each, its hops and
      paths, whether others' traffic crosses it), C(shared) (what every node's check takes whole - C(hosts),
      C(peers) (the address each node is reached at), C(fabric) (switched - C(scheme), C(leaf_routes) and
      C(rails), every node's address on every rail), C(layout), C(renumbering)), C(cabling) and
      C(unreachable) (the hosts planned without, with O(allow_unreachable)).
    - C(cabling) (mesh) holds C(shape) (full_mesh, ring, chain or partial), C(order) (the nodes along the
      ring or chain, for rank order), C(link_prefix), C(max_cables) (cables of the most cabled pair),
      C(cables), C(transit), C(non_neighbours), C(max_hops), C(device_index_problems) (pairs NCCL's
      built-in subnet-aware routing cannot connect on some device index) and C(backup) (C(full_mesh) or
      C(ring) when the nodes have backup routes, else empty).
  returned: always
  type: dict
"""

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh.cluster import MESH_NETWORK_PLAN_SPEC
from ansible_collections.rdmaops.cluster.plugins.module_utils.phase_module import refuse_without_action


def main() -> None:
    refuse_without_action("mesh_network_plan", MESH_NETWORK_PLAN_SPEC)


if __name__ == "__main__":
    main()
