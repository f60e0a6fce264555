#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: lab_rootfs
short_description: Mount a lab node's root file system over the shared base and seed its own files
version_added: "0.1.0"
description:
  - Mounts an overlayfs at O(path) with O(lower) as the read-only lower layer and O(upper) / O(work) as the
    node's own layer, creating the directories. Does nothing when O(path) is already a mount point (unlike
    M(ansible.posix.mount) with C(state=ephemeral), which always remounts).
  - Then writes O(files) inside the mounted root, each only when its content or mode differs, and generates
    the node's SSH host keys when O(ssh_host_keys) is set and they are missing. One call per node keeps
    re-runs of large labs fast.
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
  files:
    description: Files to write inside the node's root.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: Absolute path inside the node.
        type: str
        required: true
      content:
        description: File content, or the managed block's content when O(files[].marker) is set.
        type: str
        required: true
      mode:
        description: Octal file mode.
        type: str
        default: "0644"
      marker:
        description: Manage only the lines between C(# BEGIN marker) and C(# END marker); the rest is kept.
        type: str
  ssh_host_keys:
    description: Generate missing SSH host keys in the node's C(/etc/ssh) (C(ssh-keygen -A)).
    type: bool
    default: false
extends_documentation_fragment:
  - rdmaops.cluster.lab
"""

EXAMPLES = r"""
- name: Mount node1's root and give it a hostname
  rdmaops.cluster.lab_rootfs:
    lower: /var/lib/rdmaops-lab/base-0123456789ab
    upper: /var/lib/rdmaops-lab/lab/node1/upper
    work: /var/lib/rdmaops-lab/lab/node1/work
    path: /var/lib/rdmaops-lab/lab/node1/root
    ssh_host_keys: true
    files:
      - path: /etc/hostname
        content: "node1\n"
      - path: /etc/hosts
        marker: lab management addresses
        content: "10.99.0.11 node1\n"
"""

RETURN = r"""
changes:
  description: What was done (or would be done in check mode).
  returned: always
  type: list
  elements: str
  sample:
    - mount overlay /var/lib/rdmaops-lab/lab/node1/root
    - write /var/lib/rdmaops-lab/lab/node1/root/etc/hostname
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.rdmaops.cluster.plugins.module_utils.lab.host import Host
from ansible_collections.rdmaops.cluster.plugins.module_utils.lab.plan import LabError
from ansible_collections.rdmaops.cluster.plugins.module_utils.lab.rootfs import write_root_file


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "lower": {"type": "path", "required": True},
            "upper": {"type": "path", "required": True},
            "work": {"type": "path", "required": True},
            "path": {"type": "path", "required": True},
            "files": {
                "type": "list",
                "elements": "dict",
                "default": [],
                "options": {
                    "path": {"type": "str", "required": True},
                    "content": {"type": "str", "required": True},
                    "mode": {"type": "str", "default": "0644"},
                    "marker": {"type": "str"},
                },
            },
            "ssh_host_keys": {"type": "bool", "default": False},
        },
        supports_check_mode=True,
    )
    p = module.params
    if not os.path.isdir(p["lower"]):
        module.fail_json(msg=f"lower directory {p['lower']} does not exist")
    # Mounting and writing need no instance name; "rootfs" only satisfies Host's check.
    host = Host("rootfs", check_mode=module.check_mode)
    root = p["path"]
    try:
        host.mount_overlay(p["lower"], p["upper"], p["work"], root)
        # In check mode on a fresh node nothing is mounted yet: every file would be written.
        for spec in p["files"]:
            try:
                mode = int(spec["mode"], 8)
            except ValueError:
                module.fail_json(msg=f"mode {spec['mode']!r} of {spec['path']} is not octal")
            write_root_file(host, root, spec["path"], spec["content"], mode, spec["marker"])
        if p["ssh_host_keys"] and not os.path.exists(os.path.join(root, "etc/ssh/ssh_host_ed25519_key")):
            host.change("generate SSH host keys", ["ssh-keygen", "-A", "-f", root])
    except LabError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(changed=bool(host.changes), changes=host.changes)


if __name__ == "__main__":
    main()
