#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: lab_check
short_description: Check a local virtual cluster (lab) instance's settings and host, and plan its network
version_added: "0.1.0"
description:
  - The rdmaops.cluster.lab role's C(tasks/validate.yml); the controller is the lab's host.
  - Fails, with every error in one message each naming its value, on a bad state, instance name, node count,
    topology, node prefix, management CIDR, inventory directory or cache and run directories; when it does
    not run as root on the local machine; when O(state=present) and the management CIDR is not a network,
    has no room for the nodes and switches, or overlaps an address of another host interface (another
    instance or a real network); and when O(inventory_text) shows an inventory the lab did not write.
  - For O(state=present) plans the instance's network as module rdmaops.cluster.lab_fabric makes it (per node
    its number, netns, management address, ports and MACs; the mesh links) and digests the lab's code
    (C(roles/lab) and C(plugins) under O(code_root)) for the lab's fast path.
author:
  - Rdmaops Developers (@rdmaops)
options:
  state:
    description: C(lab_state), V(present), V(absent) or V(crashed).
    type: raw
    required: true
  crash_nodes:
    description: C(lab_crash_nodes), the nodes V(crashed) kills; not empty for that state.
    type: raw
    default: []
  name:
    description: C(lab_name), 1-10 lowercase letters or digits, a letter first.
    type: raw
    required: true
  nodes:
    description: C(lab_nodes), how many nodes (1 to 32).
    type: raw
    required: true
  topology:
    description: C(lab_topology), V(mesh), V(ring), V(chain), V(rails) or V(switched).
    type: raw
    required: true
  fabric_ports:
    description: C(lab_fabric_ports), the data ports of each node of a switched lab (1-8).
    type: raw
    default: 1
  fabric:
    description:
      - C(lab_fabric) of a switched lab, V(shared) (every port on one bridge) or V(rails) (port k of every
        node on bridge k).
    type: raw
    default: shared
  node_prefix:
    description: C(lab_node_prefix), 1-12 lowercase letters or digits, a letter first.
    type: raw
    required: true
  switches:
    description: C(lab_switches), the switches' names.
    type: list
    elements: str
    default: []
  mgmt_cidr:
    description: C(lab_mgmt_cidr), the IPv4 management network.
    type: raw
    required: true
  inventory_dir:
    description: C(lab_inventory_dir), as set.
    type: raw
    required: true
  inventory_path:
    description: The inventory directory as an absolute path, for messages.
    type: str
    required: true
  inventory_text:
    description: The text of the C(hosts.yml) already in the inventory directory; null where there is none.
    type: str
  cache_dir:
    description: C(lab_cache_dir), absolute.
    type: raw
    required: true
  run_dir:
    description: C(lab_run_dir), absolute.
    type: raw
    required: true
  uid:
    description: The user id the play runs as on the host (C(id -u)).
    type: str
    required: true
  connection:
    description: The play's connection; the lab is built by a V(local) one.
    type: str
    default: local
  host_addresses:
    description: The host's IPv4 addresses as C(ip -j -4 addr show) prints them.
    type: list
    elements: dict
    default: []
  code_root:
    description: The collection's root, whose C(roles/lab) and C(plugins) are digested; none without it.
    type: path
extends_documentation_fragment:
  - rdmaops.cluster.phase
"""

EXAMPLES = r"""
- name: Check the lab settings and the host, and plan the lab network
  rdmaops.cluster.lab_check:
    state: present
    name: lab
    nodes: 3
    topology: mesh
    node_prefix: node
    mgmt_cidr: 10.99.0.0/24
    inventory_dir: inventories/lab
    inventory_path: "{{ playbook_dir }}/inventories/lab"
    cache_dir: /var/lib/rdmaops-lab
    run_dir: /run/rdmaops-lab
    uid: "{{ lookup('ansible.builtin.pipe', 'id -u') }}"
    host_addresses: "{{ lookup('ansible.builtin.pipe', 'ip -j -4 addr show') | from_json }}"
  register: lab_check_result
"""

RETURN = r"""
errors:
  description: Every bad setting or host problem, each naming its value; empty when the task succeeds.
  returned: always
  type: list
  elements: str
plan:
  description: What the instance looks like.
  returned: always
  type: dict
  contains:
    network:
      description: For O(state=present), the plan module rdmaops.cluster.lab_fabric returns as RV(plan), null
        otherwise.
      type: dict
      sample: {lab: lab, topology: mesh, mgmt_cidr: 10.99.0.0/24, mgmt_host_ip: 10.99.0.1,
               nodes: [{name: node1, index: 1, netns: lab-node1, mgmt_ip: 10.99.0.11}]}
    code_digest:
      description: Digest of the lab's code under O(code_root), for O(state=present); null otherwise.
      type: str
"""

from ansible_collections.rdmaops.cluster.plugins.module_utils.lab.phase import LAB_CHECK_SPEC
from ansible_collections.rdmaops.cluster.plugins.module_utils.phase_module import refuse_without_action


def main() -> None:
    refuse_without_action("lab_check", LAB_CHECK_SPEC)


if __name__ == "__main__":
    main()
