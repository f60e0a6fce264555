#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: munge_key
short_description: Install the cluster's munge key, binary-safe and never shown
version_added: "0.1.0"
description:
  - Writes the munge key given as base64 (as M(ansible.builtin.slurp) returns it, or from a vaulted
    variable) to O(path) when its bytes differ, atomically, owned by munge with mode 0400.
  - M(ansible.builtin.copy) with C(content) cannot carry the random binary key that C(mungekey) creates,
    hence this module. The key is a C(no_log) option, so it never appears in output, at any verbosity.
author:
  - Rdmaops Developers (@rdmaops)
options:
  content_b64:
    description: The key, base64-encoded.
    type: str
    required: true
  path:
    description: Where munged reads its key.
    type: path
    default: /etc/munge/munge.key
  owner:
    description: Owner of the key file.
    type: str
    default: munge
  group:
    description: Group of the key file.
    type: str
    default: munge
  mode:
    description: Mode of the key file; munged refuses keys readable by others.
    type: str
    default: "0400"
attributes:
  check_mode:
    description: Reports whether the key or its owner or mode would change, and changes nothing.
    support: full
  diff_mode:
    description: Says that the key would be replaced, never what it is.
    support: partial
  platform:
    description: Linux hosts with munge installed.
    support: full
    platforms: posix
"""

EXAMPLES = r"""
- name: Read the controller's key
  ansible.builtin.slurp:
    src: /etc/munge/munge.key
  register: controller_key
  no_log: true
  delegate_to: "{{ groups['slurm_controller'][0] }}"
  run_once: true

- name: Install it on every node
  rdmaops.cluster.munge_key:
    content_b64: "{{ controller_key.content }}"
  no_log: true
  notify: Restart munge
"""

RETURN = r"""
key_changed:
  description: Whether the key's bytes changed (owner or mode alone may also change the file).
  returned: always
  type: bool
  sample: true
"""

import base64
import binascii
import hashlib
import os
import tempfile

from ansible.module_utils.basic import AnsibleModule


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "content_b64": {"type": "str", "required": True, "no_log": True},
            "path": {"type": "path", "default": "/etc/munge/munge.key"},
            "owner": {"type": "str", "default": "munge"},
            "group": {"type": "str", "default": "munge"},
            "mode": {"type": "str", "default": "0400"},
        },
        supports_check_mode=True,
    )
    path = module.params["path"]
    try:
        key = base64.b64decode(module.params["content_b64"], validate=True)
    except (binascii.Error, ValueError):
        module.fail_json(msg="content_b64 is not valid base64")
    if len(key) < 32:
        module.fail_json(msg=f"the munge key is {len(key)} bytes; munge needs at least 32")
    try:
        with open(path, "rb") as fh:
            current = fh.read()
    except FileNotFoundError:
        current = None
    key_changed = current is None or _digest(current) != _digest(key)
    diff = {"before_header": path, "after_header": path, "before": "", "after": ""}
    if key_changed:
        diff["before"] = "(no key)\n" if current is None else "(the old key)\n"
        diff["after"] = "(the cluster's key)\n"
    changed = key_changed
    if key_changed and not module.check_mode:
        directory = os.path.dirname(path)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".munge.key.")
        try:
            os.fchmod(fd, 0o400)
            with os.fdopen(fd, "wb") as fh:
                fh.write(key)
            module.atomic_move(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    file_args = module.load_file_common_arguments(
        {
            "path": path,
            "owner": module.params["owner"],
            "group": module.params["group"],
            "mode": module.params["mode"],
        }
    )
    if os.path.exists(path):
        changed = module.set_fs_attributes_if_different(file_args, changed)
    module.exit_json(changed=changed, key_changed=key_changed, diff=diff)


if __name__ == "__main__":
    main()
