#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: lab_teardown
short_description: Remove a local virtual cluster (lab) instance, or some of its nodes, also after a crash
version_added: "0.1.0"
description:
  - Finds what belongs to instance O(name) by its prefix, not from a state file, so half-made and crashed
    instances are removed too, and other instances are never touched. Processes are those in the cgroups
    C(rdmaops-lab/<name>/...), in the network namespaces C(<name>-*) or with C(<cache_dir>/<name>/) in their
    command line; containers get SIGRTMIN+4 (systemd's poweroff) on their PID 1, other processes SIGTERM, and
    whatever is left after O(stop_timeout) seconds gets SIGKILL.
  - Then it unmounts everything under C(<cache_dir>/<name>/), deletes the namespaces (and the veths in them),
    the host links named C(<name>-*), the cgroups and the directories C(<cache_dir>/<name>) and
    C(<run_dir>/<name>). The shared base image and wheelhouse are left for other instances.
  - With O(keep), only nodes not listed are removed (shrinking an instance); the instance's bridges, apt proxy
    and files stay.
  - Idempotent; check mode reports what would be removed.
author:
  - Rdmaops Developers (@rdmaops)
options:
  keep:
    description: Nodes to keep; when given, only the other nodes are removed.
    type: list
    elements: str
  infra_units:
    description: Units of the instance that are not nodes; they stay when O(keep) is given.
    type: list
    elements: str
    default: [aptproxy]
  stop_timeout:
    description: Seconds to wait for an orderly stop before SIGKILL.
    type: int
    default: 30
extends_documentation_fragment:
  - rdmaops.cluster.lab
  - rdmaops.cluster.lab.instance
"""

EXAMPLES = r"""
- name: Remove instance lab completely
  rdmaops.cluster.lab_teardown:
    name: lab

- name: Shrink instance lab to three nodes
  rdmaops.cluster.lab_teardown:
    name: lab
    keep: [node1, node2, node3]
"""

RETURN = r"""
removed_nodes:
  description: Nodes removed (or that would be removed in check mode).
  returned: always
  type: list
  elements: str
  sample: [node4]
changes:
  description: What was done.
  returned: always
  type: list
  elements: str
  sample: ["stop all units (42 processes)", "delete netns lab-node1"]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.rdmaops.cluster.plugins.module_utils.lab.host import INSTANCE_SPEC, Host
from ansible_collections.rdmaops.cluster.plugins.module_utils.lab.plan import LabError
from ansible_collections.rdmaops.cluster.plugins.module_utils.lab.teardown import teardown


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            **INSTANCE_SPEC,
            "keep": {"type": "list", "elements": "str"},
            "infra_units": {"type": "list", "elements": "str", "default": ["aptproxy"]},
            "stop_timeout": {"type": "int", "default": 30},
        },
        supports_check_mode=True,
    )
    p = module.params
    try:
        host = Host(p["name"], p["cache_dir"], p["run_dir"], check_mode=module.check_mode)
        removed = teardown(host, p["keep"], tuple(p["infra_units"]), float(p["stop_timeout"]))
    except LabError as exc:
        module.fail_json(msg=str(exc))
    for warning in host.warnings:
        module.warn(warning)
    module.exit_json(changed=bool(host.changes), removed_nodes=removed, changes=host.changes)


if __name__ == "__main__":
    main()
