#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: nccl_mesh_plugin_check
short_description: Check the nccl_mesh_plugin role's settings; decide between the plugin and NCCL's routing
version_added: "0.2.0"
description:
  - The validate phase of the rdmaops.cluster.nccl_mesh_plugin role, on the controller. Checks the plugin's
    settings (sockets per connection, debug level, GID index, interface filter, install prefix) and fails with
    every problem in one message, each naming the role variable.
  - Otherwise returns the decision as the P(rdmaops.cluster.nccl_mesh_plugin#filter) filter makes it (one
    function for both) - NCCL 2.30.7 or newer uses its built-in subnet-aware routing unless O(force); older or
    unknown NCCL gets the plugin, as does a cabling the built-in routing cannot carry (O(cabling)).
  - Runs on the controller (an action plugin); changes nothing, the same in check mode.
author:
  - Rdmaops Developers (@rdmaops)
options:
  nccl_version:
    description: NCCL version of the venv's torch (C(2.28.9)); empty when unknown.
    type: raw
    default: ""
  force: {type: bool, default: false}
  transport: {type: raw, required: true}
  ifname: {type: raw, default: ""}
  gid_index: {type: raw}
  nsocks: {type: raw, required: true}
  debug: {type: raw, required: true}
  prefix:
    description: Build and install directory (absolute, not C(/)).
    type: raw
    required: true
  cabling: {type: dict, default: {}}
extends_documentation_fragment:
  - rdmaops.cluster.phase
  - rdmaops.cluster.nccl_mesh_plugin
"""

EXAMPLES = r"""
- name: Check the settings and decide
  rdmaops.cluster.nccl_mesh_plugin_check:
    nccl_version: 2.28.9
    transport: rdma
    nsocks: 4
    debug: 0
    prefix: /opt/rdmaops/nccl-mesh-plugin
  register: nccl_mesh_plugin_check
"""

RETURN = r"""
errors:
  description: Every problem found, each naming the role variable; the task fails with them joined by C(; ).
  returned: always
  type: list
  elements: str
plan:
  description: C(use_plugin) (bool), C(reason), C(nccl) (the version read, or none), C(env) (variables to
    add).
  returned: always
  type: dict
"""

from ansible_collections.rdmaops.cluster.plugins.module_utils.nccl.phase import NCCL_MESH_PLUGIN_CHECK_SPEC
from ansible_collections.rdmaops.cluster.plugins.module_utils.phase_module import refuse_without_action


def main() -> None:
    refuse_without_action("nccl_mesh_plugin_check", NCCL_MESH_PLUGIN_CHECK_SPEC)


if __name__ == "__main__":
    main()
