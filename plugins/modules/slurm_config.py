#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: slurm_config
short_description: Check slurm.conf is the same on every host and judge what its change asks of the daemons
version_added: "0.1.0"
description:
  - The rdmaops.cluster.slurm role's phase after each host rendered slurm.conf from its own view of the
    inventory, before any file is written.
  - Fails naming the hosts whose file differs from the first host's (a C(slurm_) variable set per host).
  - Plans per host C(restart) when a key the daemons do not re-read changed or nodes were added or removed (or
    there is no slurm.conf yet), C(reconfigure) when only what C(scontrol reconfigure) re-reads changed (node
    memory, partitions, timeouts), and C(none) when the file is the same.
author:
  - Rdmaops Developers (@rdmaops)
options:
  texts:
    description: Host to the slurm.conf it rendered, in the order of the run's hosts.
    type: dict
    required: true
  current:
    description: Host to the slurm.conf it holds now; null or missing where it has none.
    type: dict
    default: {}
extends_documentation_fragment:
  - rdmaops.cluster.phase
"""

EXAMPLES = r"""
- name: Check slurm.conf is the same everywhere and judge the change
  rdmaops.cluster.slurm_config:
    texts: "{{ dict(hosts | zip(hosts | map('extract', hostvars, 'conf_text'))) }}"
    current: "{{ dict(hosts | zip(hosts | map('extract', hostvars, ['slurm_node', 'conf']))) }}"
  vars:
    hosts: "{{ ansible_play_hosts }}"
  run_once: true
  register: slurm_config
"""

RETURN = r"""
errors:
  description: The hosts whose slurm.conf would differ, in one message; empty when the task succeeds.
  returned: always
  type: list
  elements: str
plan:
  description: C(actions), host to C(action) (V(restart), V(reconfigure) or V(none)) and C(why).
  returned: always
  type: dict
  sample: {actions: {node1: {action: reconfigure, why: ["node node2 changed"]}}}
"""

from ansible_collections.rdmaops.cluster.plugins.module_utils.phase_module import refuse_without_action
from ansible_collections.rdmaops.cluster.plugins.module_utils.slurm.phase import SLURM_CONFIG_SPEC


def main() -> None:
    refuse_without_action("slurm_config", SLURM_CONFIG_SPEC)


if __name__ == "__main__":
    main()
