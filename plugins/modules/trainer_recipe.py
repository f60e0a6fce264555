#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: trainer_recipe
short_description: Resolve and check a training recipe with the trainer's own code
version_added: "0.1.0"
description:
  - Loads a recipe of the C(rdmaops_trainer) package (a name such as C(glm), C(gpt2), C(tiny), or a C(.yaml)
    path), applies dotted-key overrides (as given with C(-e)), runs the trainer's checks, and returns the
    resolved recipe with the facts a launch needs (nodes, processes per node, world size, data-parallel
    size, gradient accumulation).
  - The recipe files and their checks are the trainer's, read through its C(config) module (PyYAML only, no
    torch), so playbooks and the trainer share one source of truth.
  - Bad input fails with a message that names the recipe key and value, before anything on a node changes.
  - Usually run on the controller (C(delegate_to) localhost, C(run_once)) with O(trainer_src) pointing at the
    collection's C(files/trainer); on a node, at the copy the python_env role installs.
author:
  - Rdmaops Developers (@rdmaops)
options:
  recipe:
    description: Recipe name (a file in C(rdmaops_trainer/recipes)) or the path of a recipe C(.yaml) file.
    type: str
    required: true
  overrides:
    description:
      - 'Dotted recipe keys and their values, for example C({"train.lr": 1e-4, "cluster.nodes": 3}).'
      - Passed to the trainer as C(--set key=value) (returned as RV(overrides)), so a launch applies the same.
      - A string value is passed as written and read as YAML by the trainer, like its own C(--set), so the
        key=value form C(-e recipe_overrides='train.lr=1e-4 train.steps=50') gives numbers.
    type: dict
    default: {}
  trainer_src:
    description: Directory that holds the C(rdmaops_trainer) package.
    type: path
    required: true
  nodes:
    description:
      - Number of hosts the job will run on. The recipe is fitted to them with the trainer's own rule
        (C(rdmaops_trainer.fit)). C(cluster.nodes) becomes this number and the global batch is kept through
        gradient accumulation, or moved to the nearest batch that splits evenly (RV(fit) says so and why). A
        key the overrides set or the recipe lists in C(cluster.pinned) is kept, and a cluster it does not fit
        is refused with the overrides that would run.
      - Not fitted when omitted.
    type: int
  procs_per_node:
    description:
      - With O(nodes), the processes each node starts (a GPU recipe's GPUs per node); omitted, the recipe's
        own C(cluster.procs_per_node).
    type: int
  check_paths:
    description: Also require the model, tokenizer and data paths of the recipe to exist where this runs.
    type: bool
    default: false
attributes:
  check_mode:
    description: Reads only; runs the same in check mode.
    support: full
  diff_mode:
    description: Nothing to compare.
    support: none
  platform:
    description: Any host with Python and PyYAML.
    support: full
    platforms: posix
"""

EXAMPLES = r"""
- name: Resolve the recipe for the hosts of this play
  rdmaops.cluster.trainer_recipe:
    recipe: "{{ recipe | default('tiny') }}"
    overrides: "{{ recipe_overrides | default({}) }}"
    trainer_src: "{{ playbook_dir }}/../files/trainer"
    nodes: "{{ ansible_play_hosts_all | length }}"
  delegate_to: localhost
  run_once: true
  register: train_recipe
"""

RETURN = r"""
recipe:
  description: The resolved recipe, every key filled in (what C(python -m rdmaops_trainer --check) prints).
  returned: success
  type: dict
overrides:
  description: The overrides as the trainer's C(--set) arguments, then the keys the fit to O(nodes) set.
  returned: success
  type: list
  elements: str
  sample: ["train.lr=0.0001", "cluster.nodes=3"]
layout:
  description:
    - How each optimizer step's batch is split over the recipe's cluster, as the trainer computes it
      (C(rdmaops_trainer.layout.BatchLayout)).
    - C(world_size), C(pipeline_stages) (1 without a pipeline), C(dp_size), C(global_batch_size),
      C(micro_batch_size) (for the pipeline strategy the schedule's own micro-batch), C(grad_accum)
      (micro-batches per step per data-parallel replica; for the pipeline strategy the schedule's
      micro-batches), C(sequences_per_rank), C(seq_len), C(tokens_per_step), C(pipelined).
  returned: success
  type: dict
  sample:
    world_size: 3
    pipeline_stages: 1
    dp_size: 3
    global_batch_size: 12
    micro_batch_size: 2
    grad_accum: 2
    sequences_per_rank: 4
    seq_len: 64
    tokens_per_step: 768
    pipelined: false
fit:
  description:
    - What fitting the recipe to O(nodes) changed, C(sets) (dotted keys and their new values, also at the
      end of RV(overrides)), C(notes) (what moved and why, and how the batch is split) and C(pinned) (the
      keys kept as written).
  returned: success
  type: dict
  sample:
    sets: {"cluster.nodes": 4, "train.micro_batch_size": 1}
    notes:
      - "cluster: 4 node(s) x 1 = 4 ranks (the recipe was written for 3 x 1)"
      - "train.micro_batch_size: 2 -> 1: 12 sequences per step do not split into micro-batches of 2 over 4
        ranks"
      - "batch: 12 sequences per step = 1 per micro-batch x 3 accumulation step(s) x 4 data-parallel rank(s)"
    pinned: []
launch:
  description:
    - C(name), C(strategy), C(device), C(nodes), C(procs_per_node), C(world_size), C(data_parallel),
      C(global_batch_size), C(micro_batch_size), C(grad_accum) (null for the pipeline strategy, whose
      schedule splits the batch itself), C(steps), C(output_dir).
  returned: success
  type: dict
  sample:
    name: tiny
    strategy: fsdp2
    device: cpu
    nodes: 3
    procs_per_node: 1
    world_size: 3
    data_parallel: 3
    global_batch_size: 12
    micro_batch_size: 2
    grad_accum: 2
    steps: 200
    output_dir: runs/tiny
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.rdmaops.cluster.plugins.module_utils.train.recipe import (
    RecipeResolveError,
    resolve,
)


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "recipe": {"type": "str", "required": True},
            "overrides": {"type": "dict", "default": {}},
            "trainer_src": {"type": "path", "required": True},
            "nodes": {"type": "int"},
            "procs_per_node": {"type": "int"},
            "check_paths": {"type": "bool", "default": False},
        },
        supports_check_mode=True,
    )
    p = module.params
    try:
        result = resolve(
            p["trainer_src"],
            p["recipe"],
            p["overrides"],
            nodes=p["nodes"],
            procs_per_node=p["procs_per_node"],
            check_paths=p["check_paths"],
        )
    except RecipeResolveError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
