#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: slurm_plan
short_description: Check what each Slurm node declares against what it has, and plan slurm.conf and gres.conf
version_added: "0.1.0"
description:
  - The rdmaops.cluster.slurm role's phase after it read every node (module
    rdmaops.cluster.slurm_node_info), and again after a first install gave C(slurmd -C)'s hardware.
  - Fails, with every error in one message each naming host and value, when a node declares more memory
    (C(slurm_real_memory)) than it has or more GPUs (C(slurm_gpus)) than C(nvidia-smi -L) lists, when a
    declared value is not a whole number, when two hosts are the same node (one C(slurmd -C) hostname), and
    when O(cgroup=true) but a node cannot use Slurm's cgroup plugins.
  - Plans the node definitions (hardware from C(slurmd -C), memory and GPUs as declared or found), their
    slurm.conf lines, the partition lines from inventory groups, the gres.conf lines and whether the cgroup
    plugins are used. Nodes are planned only once every compute node has C(slurmd -C)'s hardware
    (RV(plan.config_possible)); before slurmd is installed only the checks run.
author:
  - Rdmaops Developers (@rdmaops)
options:
  controller:
    description: The slurmctld host.
    type: str
    required: true
  compute:
    description: The compute nodes in inventory order (the order of slurm.conf).
    type: list
    elements: str
    required: true
  hosts:
    description:
      - Per host (every compute node and the controller), what the role noted of it, C(hardware) (slurmd -C's
        fields, null before slurmd is installed), C(memory_mib), C(gpus), C(gpu_files), C(cgroup)
        (C(usable), C(why)), the declared C(declared_memory) and C(declared_gpus) (empty for what the node
        has), and C(addr) (where slurmctld reaches it).
    type: dict
    required: true
  partitions:
    description: C(slurm_partitions), checked by rdmaops.cluster.slurm_check.
    type: list
    elements: dict
    required: true
  groups:
    description: The inventory's groups, for the partitions.
    type: dict
    required: true
  cgroup:
    description: Use the cgroup plugins where every compute node can (V(auto)), always (V(true)) or never.
    type: str
    choices: [auto, "true", "false"]
    default: auto
  version:
    description: Slurm's version, as numbers (for the comment in slurm.conf).
    type: list
    elements: int
extends_documentation_fragment:
  - rdmaops.cluster.phase
"""

EXAMPLES = r"""
- name: Check what each node declares and plan slurm.conf
  rdmaops.cluster.slurm_plan:
    controller: "{{ groups['slurm_controller'][0] }}"
    compute: "{{ groups['cluster'] }}"
    hosts: "{{ dict(groups['cluster'] | zip(groups['cluster'] | map('extract', hostvars, 'node_summary'))) }}"
    partitions: [{name: train, group: cluster}]
    groups: "{{ groups }}"
  run_once: true
  register: slurm_plan
"""

RETURN = r"""
errors:
  description: Every error found, each naming host and value; empty when the task succeeds.
  returned: always
  type: list
  elements: str
plan:
  description: What slurm.conf and gres.conf say.
  returned: always
  type: dict
  contains:
    config_possible:
      description: Whether every compute node has C(slurmd -C)'s hardware, so the files can be written.
      type: bool
    controller:
      description: C(host), C(name) (its NodeName) and C(addr) of the controller.
      type: dict
      sample: {host: node1, name: node1, addr: 10.99.0.11}
    version:
      description: Slurm's version as numbers (O(version)).
      type: list
      elements: int
      sample: [22, 5, 8]
    use_cgroup:
      description: Whether slurm.conf uses the cgroup plugins.
      type: bool
    cgroup_why:
      description: Why the cgroup plugins can or cannot work, per distinct reason.
      type: str
    nodes:
      description: Node definitions, C(host), C(name), C(addr), the C(slurmd -C) fields and C(gpus).
      type: list
      elements: dict
    node_lines:
      description: Their NodeName lines.
      type: list
      elements: str
      sample: ["NodeName=node1 NodeAddr=10.99.0.11 CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2
               ThreadsPerCore=1 RealMemory=24036 State=UNKNOWN"]
    partition_lines:
      description: The PartitionName lines.
      type: list
      elements: str
      sample: ["PartitionName=train Nodes=node1,node2 Default=YES MaxTime=INFINITE State=UP"]
    gres_lines:
      description: The lines of gres.conf, one per GPU Slurm hands out.
      type: list
      elements: str
      sample: ["NodeName=node1 Name=gpu File=/dev/nvidia0"]
"""

from ansible_collections.rdmaops.cluster.plugins.module_utils.phase_module import refuse_without_action
from ansible_collections.rdmaops.cluster.plugins.module_utils.slurm.phase import SLURM_PLAN_SPEC


def main() -> None:
    refuse_without_action("slurm_plan", SLURM_PLAN_SPEC)


if __name__ == "__main__":
    main()
