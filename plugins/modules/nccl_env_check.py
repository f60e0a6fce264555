#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: nccl_env_check
short_description: Check the nccl_env role's variables before anything on a node changes
version_added: "0.2.0"
description:
  - The validate phase of the rdmaops.cluster.nccl_env role, on the controller. Checks the socket interface
    name, the shared O(roce_qos) numbers and that both file paths are absolute; fails with every problem in
    one message, each naming its bad value.
  - Runs on the controller (an action plugin); changes nothing, the same in check mode.
author:
  - Rdmaops Developers (@rdmaops)
options:
  socket_ifname:
    description: Interface for NCCL bootstrap/socket traffic and gloo (C(nccl_env_socket_ifname)).
    type: raw
    required: true
  roce_qos:
    description: The fabric's RoCE QoS numbers (this role reads C(dscp)).
    type: raw
  conf_file:
    description: NCCL's configuration file (C(nccl_env_conf_file)).
    type: raw
    required: true
  env_file:
    description: The launchers' env file (C(nccl_env_file)).
    type: raw
    required: true
attributes:
  action:
    description: Runs on the controller.
    support: full
  check_mode:
    description: Checks the same; changes nothing.
    support: full
  diff_mode:
    description: Nothing to compare.
    support: none
  platform:
    description: The controller.
    support: full
    platforms: posix
"""

EXAMPLES = r"""
- name: Check the role's variables
  rdmaops.cluster.nccl_env_check:
    socket_ifname: nodeaddr0
    roce_qos: {dscp: 26}
    conf_file: /etc/nccl.conf
    env_file: /etc/rdmaops/nccl.env
"""

RETURN = r"""
errors:
  description: Every problem found, each naming its value; the task fails with them joined by C(; ).
  returned: always
  type: list
  elements: str
plan:
  description: C(dscp), the DSCP of RoCE traffic (NCCL_IB_TC = DSCP x 4).
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.rdmaops.cluster.plugins.module_utils.nccl.phase import NCCL_ENV_CHECK_SPEC


def main() -> None:
    module = AnsibleModule(argument_spec=NCCL_ENV_CHECK_SPEC, supports_check_mode=True)
    # Reached only if the action plugin is bypassed.
    module.fail_json(msg="nccl_env_check runs on the controller through its action plugin (rdmaops.cluster)")


if __name__ == "__main__":
    main()
