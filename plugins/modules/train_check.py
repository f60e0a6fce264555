#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: train_check
short_description: The train role's first phase, on the controller; resolves the recipe once
version_added: "0.1.0"
description:
  - Runs on the controller (an action plugin); nothing on a node changes, and check mode runs the same.
  - Merges O(overrides) with the shorthands O(steps), O(warmup), O(lr) and the choices O(hsdp) and O(resume),
    resolves the recipe with the trainer's own code (as M(rdmaops.cluster.trainer_recipe) does) and fits it
    to the number of O(hosts) (C(cluster.nodes); the global batch kept through gradient accumulation, or moved
    to the nearest even split). M(rdmaops.cluster.train_plan) fits it to the nodes' GPUs and writes it out as
    the one recipe file every node runs.
  - "Fails with every error in one message, each naming its setting and value (an unknown recipe lists the
    known ones; a recipe that cannot run on the hosts names the overrides that would, in the
    C(-e '{\"recipe_overrides\": {...}}') form)."
author:
  - Rdmaops Developers (@rdmaops)
options:
  recipe:
    description: Recipe name (C(rdmaops_trainer/recipes)) or the path of a recipe C(.yaml) on the controller.
    type: str
    required: true
  overrides:
    description: Dotted recipe keys and values (C(-e recipe_overrides)).
    type: dict
    default: {}
  steps:
    description:
      - Shorthand for C(train.steps); empty leaves the recipe's.
      - Giving it and C(train.steps) in O(overrides) with different values is an error.
    type: raw
    default: ''
  warmup:
    description: Shorthand for C(train.warmup_steps).
    type: raw
    default: ''
  lr:
    description: Shorthand for C(train.lr).
    type: raw
    default: ''
  hsdp:
    description:
      - Hybrid sharding, set as the recipe key C(strategy.fsdp2.hsdp) (V(on) true, V(off) false, V(auto)
        auto); empty leaves the recipe's choice. With auto, the trainer follows the launch's C(RDMAOPS_HSDP)
        (M(rdmaops.cluster.train_plan) sets it from the fabric).
    type: str
    choices: ['', auto, 'on', 'off']
    default: ''
  launcher:
    description: C(torchrun), C(deepspeed) or C(slurm).
    type: str
    choices: [torchrun, deepspeed, slurm]
    default: torchrun
  job:
    description: Job name; empty takes the recipe's name.
    type: str
    default: ''
  resume:
    description: C(never) or C(latest) (the recipe's C(train.resume) becomes C(never) or C(auto)).
    type: str
    choices: [never, latest]
    default: never
  trainer_src:
    description: The trainer package's source directory on the controller.
    type: path
    required: true
  hosts:
    description:
      - The job's hosts in the play's order (their number must equal the recipe's C(cluster.nodes)).
      - C(plan.hosts) is them in node-rank order, along the cabling on a ring or chain (O(ports)).
    type: list
    elements: str
    required: true
  topology:
    description: The data network's topology (C(mesh_network_topology)); V(switched) keeps the hosts' order.
    type: str
    choices: [mesh, switched]
    default: mesh
  ports:
    description:
      - Every host's C(mesh_network_ports) (host -> peer -> port or list of ports), the cables as
        M(rdmaops.cluster.mesh_network_check) reads them. On a ring or chain, C(plan.hosts) follows the cables
        (C(mesh_network_cabling.order)); a full mesh or no port map keeps the hosts' order.
      - A cable listed by one end only is an error.
    type: dict
    default: {}
  backup_routes:
    description: Whether mesh_network gave the node addresses backup routes (a full mesh of 3+ nodes or a
      ring) - the watched cables of C(plan.cables) are then C(rerouted).
    type: bool
    default: true
  venv:
    description: The venv on every node.
    type: path
    default: /opt/rdmaops/venv
  base_dir:
    description: Jobs work in C(<base_dir>/<job>).
    type: path
    default: /var/lib/rdmaops/train
  log_dir:
    description: Where the job's log and process events go on every node.
    type: path
    default: /var/log/rdmaops
  render_dir:
    description: With a directory, the role writes each node's launch files under C(<render_dir>/<job>/<node>)
      on the controller and starts nothing (see C(plan.render_dir)).
    type: str
    default: ''
extends_documentation_fragment:
  - rdmaops.cluster.phase
  - rdmaops.cluster.health
  - rdmaops.cluster.health.mode
"""

EXAMPLES = r"""
- name: Resolve the recipe on the controller and check the role's inputs
  rdmaops.cluster.train_check:
    recipe: tiny
    steps: 100
    trainer_src: "{{ playbook_dir }}/../files/trainer"
    hosts: "{{ ansible_play_hosts_all }}"
  run_once: true
  register: train_check
"""

RETURN = r"""
errors:
  description: Every error found, each naming its setting and value; empty when the plan is returned.
  returned: always
  type: list
  elements: str
plan:
  description:
    - C(job), C(unit), C(launcher), C(resume), C(hosts) (in node-rank order), C(master) (rank 0),
      C(order_note) (the rank order and why, for the preflight notes; empty without a port map), C(cables)
      (per node, the direct cables' ports the watch's agents read, as M(rdmaops.cluster.train_watch) takes
      them; empty on a switched fabric or without a port map), C(workdir),
      C(output_dir), C(metrics_file), C(log_file), C(events_file), C(steps), C(paths) (the recipe's inputs
      every node must hold), C(launch) (the recipe on the hosts with its own processes per node),
      C(overrides) (the recipe keys the plan resolves again with), C(pinned) (the keys the fit keeps, the
      recipe's C(cluster.pinned) and the overrides' own), C(model_config) (an hf model's C(config.json), read
      by the preflight), C(trainer_src), C(render_dir) (absolute; empty unless O(render_dir) is set).
  returned: success
  type: dict
"""

from ansible_collections.rdmaops.cluster.plugins.module_utils.phase_module import refuse_without_action
from ansible_collections.rdmaops.cluster.plugins.module_utils.train.phase import TRAIN_CHECK_SPEC


def main() -> None:
    refuse_without_action("train_check", TRAIN_CHECK_SPEC)


if __name__ == "__main__":
    main()
