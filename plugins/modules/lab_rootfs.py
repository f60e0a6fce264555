#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: lab_overlay
short_description: Mount a lab node's root file system as an overlay over the shared base
version_added: "0.1.0"
description:
  - Mounts an overlayfs at O(path) with O(lower) as the read-only lower layer and O(upper) / O(work) as the
    node's
    own layer, creating the directories. Does nothing when O(path) is already a mount point
    (unlike M(ansible.posix.mount) with C(state=ephemeral), which always remounts).
  - Unmounting is the job of M(rdmaops.cluster.lab_teardown), which also finds mounts left by a crash.
author:
  - Rdmaops Developers (@rdmaops)
options:
  lower:
    description: Read-only lower directory (the base root file system).
    type: path
    required: true
  upper:
    description: Upper (writable) directory of this node.
    type: path
    required: true
  work:
    description: Overlayfs work directory, on the same file system as O(upper).
    type: path
    required: true
  path:
    description: Mount point.
    type: path
    required: true
attributes:
  check_mode:
    description: Reports what would change without changing it.
    support: full
  diff_mode:
    description: No diff is returned.
    support: none
  platform:
    description: Linux hosts with iproute2, overlayfs, cgroups and systemd-nspawn.
    support: full
    platforms: posix
"""

EXAMPLES = r"""
- name: Mount node1's root
  rdmaops.cluster.lab_overlay:
    lower: /var/lib/rdmaops-lab/base-0123456789ab
    upper: /var/lib/rdmaops-lab/lab/node1/upper
    work: /var/lib/rdmaops-lab/lab/node1/work
    path: /var/lib/rdmaops-lab/lab/node1/root
"""

RETURN = r"""
path:
  description: The mount point.
  returned: always
  type: str
  sample: /var/lib/rdmaops-lab/lab/node1/root
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.rdmaops.cluster.plugins.module_utils.lab import Host, LabError


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "lower": {"type": "path", "required": True},
            "upper": {"type": "path", "required": True},
            "work": {"type": "path", "required": True},
            "path": {"type": "path", "required": True},
        },
        supports_check_mode=True,
    )
    p = module.params
    if not os.path.isdir(p["lower"]):
        module.fail_json(msg=f"lower directory {p['lower']} does not exist")
    # The instance name only matters for the host's other operations; mounting needs none.
    host = Host("overlay", check_mode=module.check_mode)
    try:
        host.mount_overlay(p["lower"], p["upper"], p["work"], p["path"])
    except LabError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(changed=bool(host.changes), path=p["path"])


if __name__ == "__main__":
    main()
