#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: lab_stamp
short_description: Record a lab instance as lab.yml left it, or tell whether it still is (lab.yml's fast path)
version_added: "0.1.0"
description:
  - With O(state=present), writes C(<run_dir>/<name>/lab-stamp.json) with O(digest) (the inputs of the run,
    every lab setting and the collection's lab code) and the sha256 of each of O(files).
  - With O(state=check), tells whether the instance is still as that run left it. The stamp must exist
    with the same digest, and each file must have the recorded sha256. Each unit of O(units) must run
    with exactly its command line; each node of O(nodes) must have its network namespace, and its sshd
    must answer on port 22 of its management address. Every difference is named in RV(reasons).
  - The stamp is in the run directory, a tmpfs, so a host reboot (which stops every node) forgets it, and
    a teardown removes it with the instance.
author:
  - Rdmaops Developers (@rdmaops)
options:
  state:
    description: C(check) compares, C(present) records.
    type: str
    choices: [check, present]
    default: check
  digest:
    description: Digest of the inputs of the run.
    type: str
    required: true
  units:
    description:
      - Unit name (a node's name, C(aptproxy)) -> the command line it must run with, as given to
        M(rdmaops.cluster.lab_unit). Required with O(state=check).
    type: dict
  nodes:
    description:
      - The instance's nodes and switches, each with C(name), C(netns) and C(mgmt_ip) (the lab plan's
        entries). Each name must also be in O(units).
    type: list
    elements: dict
    default: []
  files:
    description: Files lab.yml wrote whose content is recorded (inventory, apt proxy configuration, SSH key).
    type: list
    elements: path
    default: []
extends_documentation_fragment:
  - rdmaops.cluster.lab
  - rdmaops.cluster.lab.instance
notes:
  - The fast path sees only what is listed here. C(-e lab_fast_path=false) runs every step of lab.yml
    whatever the stamp says.
"""

EXAMPLES = r"""
- name: Compare the instance with the last run
  rdmaops.cluster.lab_stamp:
    name: lab
    digest: "{{ lab_stamp_digest }}"
    units: {node1: [nsenter, --net=/run/netns/lab-node1, --, systemd-nspawn, --boot]}
    nodes: [{name: node1, netns: lab-node1, mgmt_ip: 10.99.0.11}]
    files: [/work/inventories/lab/hosts.yml]
  register: lab_stamp_check
"""

RETURN = r"""
current:
  description: Whether the instance is as the last run with the same digest left it (state=check).
  returned: always
  type: bool
  sample: false
reasons:
  description: Why it is not current, one line each; empty when it is.
  returned: always
  type: list
  elements: str
  sample: ["node2 is not running as planned"]
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.rdmaops.cluster.plugins.module_utils.lab import stamp as lab_stamp
from ansible_collections.rdmaops.cluster.plugins.module_utils.lab.host import INSTANCE_SPEC, Host
from ansible_collections.rdmaops.cluster.plugins.module_utils.lab.plan import LabError
from ansible_collections.rdmaops.cluster.plugins.module_utils.site.stamp import write_if_changed


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            **INSTANCE_SPEC,
            "state": {"type": "str", "choices": ["check", "present"], "default": "check"},
            "digest": {"type": "str", "required": True},
            "units": {"type": "dict"},
            "nodes": {"type": "list", "elements": "dict", "default": []},
            "files": {"type": "list", "elements": "path", "default": []},
        },
        required_if=[("state", "check", ["units"])],
        supports_check_mode=True,
    )
    p = module.params
    try:
        host = Host(p["name"], p["cache_dir"], p["run_dir"], check_mode=module.check_mode)
    except LabError as exc:
        module.fail_json(msg=str(exc))
    path = os.path.join(host.instance_run_dir, lab_stamp.STAMP_NAME)
    if p["state"] == "check":
        try:
            lab_stamp.check_inputs(p["units"], p["nodes"], p["files"])
            reasons = lab_stamp.check(
                path, p["digest"], p["units"], p["nodes"], host.unit_running, host.netns_list()
            )
        except (lab_stamp.LabStampError, LabError) as exc:
            module.fail_json(msg=str(exc))
        module.exit_json(changed=False, current=not reasons, reasons=reasons)

    text = lab_stamp.render(p["digest"], p["files"])
    changed = write_if_changed(path, text, module.check_mode, module.atomic_move)
    module.exit_json(changed=changed, current=True, reasons=[])


if __name__ == "__main__":
    main()
