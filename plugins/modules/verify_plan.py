#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: verify_plan
short_description: Plan fabric verification - the links, rounds of disjoint pairs and a node's part
version_added: "0.1.0"
description:
  - The plan phase of the rdmaops.cluster.verify role (an action plugin) - the links to measure from every
    node's C(mesh_network_plan) (every cable in a mesh, several for a pair joined by several cables; the
    fabric ports when switched, one per rail with several), in rounds where no node is in two pairs (a
    switched pair's rails in the same round), this node's parts (client or server, per rail) in each round,
    and the environment of the all-reduce (the sockets on O(socket_ifname), then the NCCL env file's
    variables).
author:
  - Rdmaops Developers (@rdmaops)
options:
  host:
    description: This node.
    type: str
    required: true
  hosts:
    description: Every node verified, in order.
    type: list
    elements: str
    required: true
  plans:
    description: Node to its C(mesh_network_plan).
    type: dict
    required: true
  pattern:
    description: C(all_pairs) (every cable, or every pair when switched) or C(ring) (each node and the next).
    type: str
    default: all_pairs
  directions:
    description: C(both) (each link both ways, one direction per round) or C(one).
    type: str
    default: both
  max_concurrent:
    description: At most this many pairs at once (0 - no limit).
    type: raw
    default: 0
  socket_ifname:
    description: Interface gloo and NCCL sockets bind to.
    type: str
    default: ""
  env_file:
    description: Text of the NCCL environment file (nccl_env role), empty when there is none.
    type: str
    default: ""
  port:
    description: The bandwidth servers' port (latency one above); the rails of a pair measured at once
      take the ports two apart.
    type: int
    default: 5201
  rdma_ports:
    description: This node's RDMA ports (C(rdma_port_info)'s C(rdma_ports)); each part measures through the
      port whose netdev is its interface, else the first active one.
    type: list
    elements: dict
    default: []
extends_documentation_fragment:
  - rdmaops.cluster.phase
"""

EXAMPLES = r"""
- name: Plan the links and rounds
  rdmaops.cluster.verify_plan:
    host: "{{ inventory_hostname }}"
    hosts: "{{ ansible_play_hosts_all }}"
    plans: "{{ dict(ansible_play_hosts_all | zip(ansible_play_hosts_all
               | map('extract', hostvars, 'mesh_network_plan'))) }}"
    socket_ifname: nodeaddr0
  register: verify_planned
"""

RETURN = r"""
errors:
  description: A plan that cannot be made (a node without a plan, no cable between ring neighbours, a bad
    setting).
  returned: always
  type: list
  elements: str
plan:
  description: C(links), C(rounds) (each a list of directed measurements), C(parts) (per round, this node's
    parts - role, pair, ifname, port, latency_port, rdma - one per rail measured at once, none when it
    rests), C(collective_env).
  returned: always
  type: dict
"""

from ansible_collections.rdmaops.cluster.plugins.module_utils.phase_module import refuse_without_action
from ansible_collections.rdmaops.cluster.plugins.module_utils.verify.phase import VERIFY_PLAN_SPEC


def main() -> None:
    refuse_without_action("verify_plan", VERIFY_PLAN_SPEC)


if __name__ == "__main__":
    main()
