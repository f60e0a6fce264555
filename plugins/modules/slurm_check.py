#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: slurm_check
short_description: Check the Slurm inventory and settings of a run before a node is read or changed
version_added: "0.1.0"
description:
  - The rdmaops.cluster.slurm role's C(tasks/validate.yml), before any node is read.
  - Fails, with every error in one message each naming its value, when the controller group is empty, holds
    two or more hosts or its host is left out of the run (C(--limit)); when there is no compute node, one is
    not an inventory host or is left out of the run; when a partition lacks a name or group, names a missing
    or empty group or hosts that are not Slurm nodes, or two partitions are the default; and when
    O(cgroup), O(check_timeout), O(kill_wait) or O(cluster_name) is not what slurm.conf accepts, or a health
    check setting is wrong (an unknown threshold or check, a value of the wrong type, an unknown node state).
author:
  - Rdmaops Developers (@rdmaops)
options:
  controllers:
    description: The hosts of the controller group (exactly one is accepted).
    type: list
    elements: str
    default: []
  nodes:
    description: The hosts of the compute group.
    type: list
    elements: str
    default: []
  inventory_hosts:
    description: Every host of the inventory (C(groups['all'])).
    type: list
    elements: str
    required: true
  play_hosts:
    description: The hosts of this run (C(ansible_play_hosts_all)).
    type: list
    elements: str
    required: true
  running_hosts:
    description:
      - The hosts of this run still running (C(ansible_play_hosts)), without those that failed or were
        unreachable in an earlier task.
      - A controller or node in O(play_hosts) but not here is an error that names it.
    type: list
    elements: str
    required: true
  controller_group:
    description: Name of the controller group, for messages.
    type: str
    required: true
  partitions:
    description: C(slurm_partitions), a list of C(name), C(group) and optional C(default) and C(max_time).
    type: raw
    required: true
  groups:
    description: The inventory's groups (C(groups)), for the partitions.
    type: dict
    required: true
  cgroup:
    description: C(slurm_cgroup); V(auto), V(true) or V(false).
    type: raw
    required: true
  check_timeout:
    description: C(slurm_check_timeout), whole seconds.
    type: raw
    required: true
  kill_wait:
    description: C(slurm_kill_wait), whole seconds.
    type: raw
    required: true
  cluster_name:
    description: C(slurm_cluster_name), 1-40 lower-case letters, digits, C(_) and C(-).
    type: raw
    required: true
  health_check_interval:
    description: C(slurm_health_check_interval), whole seconds; 0 or empty leaves the HealthCheckProgram out.
    type: raw
    default: ''
  health_check_node_state:
    description:
      - C(slurm_health_check_node_state), HealthCheckNodeState - V(ANY), V(ALLOC), V(IDLE), V(MIXED),
        V(NONDRAINED_IDLE), V(CYCLE), comma-separated.
    type: raw
    default: ANY
extends_documentation_fragment:
  - rdmaops.cluster.phase
  - rdmaops.cluster.health
"""

EXAMPLES = r"""
- name: Check the controller, the nodes and the partitions against the inventory and this run
  rdmaops.cluster.slurm_check:
    controllers: "{{ groups['slurm_controller'] | default([]) }}"
    nodes: "{{ groups['cluster'] | default([]) }}"
    inventory_hosts: "{{ groups['all'] }}"
    play_hosts: "{{ ansible_play_hosts_all }}"
    running_hosts: "{{ ansible_play_hosts }}"
    controller_group: slurm_controller
    partitions: [{name: train, group: cluster}]
    groups: "{{ groups }}"
    cgroup: auto
    check_timeout: 60
    kill_wait: 10
    cluster_name: rdmaops
  run_once: true
"""

RETURN = r"""
errors:
  description: Every inventory or settings error, each naming its value; empty when the task succeeds.
  returned: always
  type: list
  elements: str
plan:
  description:
    - C(controller) (the controller host), C(cgroup) (O(cgroup) as V(auto), V(true) or V(false)),
      C(health_check_interval) (seconds, 0 when disabled) and C(health_check_node_state) (upper case).
  returned: always
  type: dict
  sample: {controller: node1, cgroup: auto, health_check_interval: 300, health_check_node_state: ANY}
"""

from ansible_collections.rdmaops.cluster.plugins.module_utils.phase_module import refuse_without_action
from ansible_collections.rdmaops.cluster.plugins.module_utils.slurm.phase import SLURM_CHECK_SPEC


def main() -> None:
    refuse_without_action("slurm_check", SLURM_CHECK_SPEC)


if __name__ == "__main__":
    main()
