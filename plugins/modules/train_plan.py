#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: train_plan
short_description: The train role's second phase, on the controller; compares the preflight, plans the launch
version_added: "0.1.0"
description:
  - Runs on the controller (an action plugin) after M(rdmaops.cluster.train_preflight) reported on every node;
    nothing on a node changes, and check mode runs the same.
  - Compares the reports (versions, GPUs, inputs and their copies, interfaces, ports, units, disk, output
    directory) and fails with every problem in one message, each naming node, value and fix.
  - With O(health_mode=fail), every failing node health check (M(rdmaops.cluster.node_health) on each node,
    plus the driver and CUDA versions compared across nodes) is one more problem of that message, naming node,
    check, value and threshold; with V(warn) the findings are notes only.
  - Fits the recipe to the nodes as M(rdmaops.cluster.train_check) resolved it. A GPU recipe runs one process
    per GPU (the fewest any node has) unless C(cluster.procs_per_node) is pinned; the global batch is kept
    through gradient accumulation or moved to the nearest even split, and the notes say how it is split.
  - For a GPU recipe, estimates the memory per GPU of the layout from the model's config and compares it
    with the smallest GPU memory the nodes report; with O(memory_check=fail) a layout that cannot fit is one
    more problem, naming the estimate and the smallest layouts that would.
  - Otherwise plans, from the plan of M(rdmaops.cluster.train_check) and the reports, what each node starts,
    its launch directory C(<workdir>/launch/<node>) (C(launch.sh), C(nccl.env), C(job.env), C(recipe.yaml),
    C(hostfile) for DeepSpeed), the unit's command (C(supervise.py) running C(launch.sh)), the job record
    (C(job.json)) and, for Slurm, the batch script. The master address is the master's NCCL/gloo interface
    address from its report, else its inventory address. C(RDMAOPS_HSDP) (the trainer's hybrid-sharding
    choice under C(strategy.fsdp2.hsdp=auto)) is 1 when every node's NCCL runs over TCP, else 0, with a note.
author:
  - Rdmaops Developers (@rdmaops)
options:
  check:
    description: The RV(rdmaops.cluster.train_check#module:plan) of the first phase.
    type: dict
    required: true
  reports:
    description: Per host, the result of M(rdmaops.cluster.train_preflight), or C({unreachable, msg}).
    type: dict
    required: true
  addresses:
    description: Per host, its inventory address (the master address when its report has none).
    type: dict
    default: {}
  master_port:
    description: Rendezvous port on node rank 0.
    type: int
    default: 29500
  min_free_gb:
    description: Free disk needed where the output goes, on every node.
    type: float
    default: 10.0
  overwrite:
    description: The previous run in the output directory is to be removed (not an error).
    type: bool
    default: false
  sync_data:
    description: Inputs a node lacks or holds in another copy are to be copied (C(plan.sync)), not errors.
    type: bool
    default: false
  env_file:
    description: The nodes' NCCL/gloo env file (nccl_env role), named in the launch files and Slurm tasks.
    type: path
    default: /etc/rdmaops/nccl.env
  extra_env:
    description: More environment variables for every node's launcher (in C(job.env)).
    type: dict
    default: {}
  health:
    description: Per host, the result of M(rdmaops.cluster.node_health) (or C({unreachable, msg})).
    type: dict
    default: {}
  health_mode:
    description: V(fail) makes failing health checks problems, V(warn) notes; V(off) ignores O(health).
    type: str
    choices: [fail, warn, 'off']
    default: 'off'
  health_severity:
    description: The severity overrides the nodes ran with (they also apply to the cross-node checks).
    type: dict
    default: {}
  hsdp_rdma_below_gbps:
    description:
      - Where every node's NCCL runs over RDMA, the rate in Gb/s below which the slowest active port NCCL may
        use (C(NCCL_IB_HCA)) counts as a slow link, as TCP does; the launch then sets C(RDMAOPS_HSDP=1).
      - V(0) never.
    type: float
    default: 0.0
  memory_check:
    description:
      - V(fail) refuses a GPU recipe whose estimated memory per GPU exceeds what the GPUs offer (their memory
        less a reserve for the CUDA context, NCCL and the allocator); V(warn) notes it; V(off) does not
        estimate.
    type: str
    choices: [fail, warn, 'off']
    default: fail
extends_documentation_fragment:
  - rdmaops.cluster.phase
"""

EXAMPLES = r"""
- name: Compare every node's report and plan the launch
  rdmaops.cluster.train_plan:
    check: "{{ train_check.plan }}"
    reports: >-
      {{ dict(ansible_play_hosts_all | zip(ansible_play_hosts_all | map('extract', hostvars, 'train_node')))
      }}
    master_port: 29500
  run_once: true
  register: train_launch
"""

RETURN = r"""
errors:
  description: The preflight's problems, each naming node, value and fix; empty when the plan is returned.
  returned: always
  type: list
  elements: str
plan:
  description:
    - C(notes) (the preflight's notes) and C(sync) (inputs to copy first; then nothing else is planned).
    - Otherwise also the job record's keys (C(job), C(unit), C(launcher), C(master), C(master_addr),
      C(master_port), C(workdir), C(output_dir), C(metrics_file), C(log_file), C(events_file), C(steps),
      C(order), C(recipe_sha256), C(launch_file), C(slurm_job_name)), C(job_record), C(launch) and C(layout)
      (the recipe as fitted to the nodes, and its batch split), C(recipe_text) (the recipe file every node
      runs), C(nodes) (per host C(node_rank), C(dir),
      C(command), C(files) (the launch directory, file name to content), C(unit_files) (absolute path to
      content, those files with C(supervise.py) and C(job.json)), C(unit_argv)), C(recipe_file),
      C(batch_script) and C(batch_script_text) (Slurm), and C(health) (the node health report over all nodes,
      null with O(health_mode=off)).
  returned: success
  type: dict
"""

from ansible_collections.rdmaops.cluster.plugins.module_utils.phase_module import refuse_without_action
from ansible_collections.rdmaops.cluster.plugins.module_utils.train.phase import TRAIN_PLAN_SPEC


def main() -> None:
    refuse_without_action("train_plan", TRAIN_PLAN_SPEC)


if __name__ == "__main__":
    main()
