#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: source_tree
short_description: Copy a source tree to a node in one transfer, only when it differs from the last copy
version_added: "0.2.0"
description:
  - Computes the digest of O(files) on the controller (names and contents) and reads the stamp the last copy
    left in O(dest). Where they differ, sends the tree as one tar and extracts it with
    M(ansible.builtin.unarchive) - directories 0755, files 0644, owned by root unless O(owner) or O(group)
    - and the stamp last; where they agree, changes nothing. A no-change run costs one read of the stamp.
  - The stamp holds the digest on its first line, then one C(sha256  path) line per file (sha256sum's format),
    so C(--diff) shows the files that differ from the last copy as the stamp's lines that change.
  - Files under O(dest) that are no longer in O(files) stay.
  - The roles copy the trainer (python_env), the plugin's C sources (nccl_mesh_plugin) and the health checks'
    code (slurm) with it.
author:
  - Rdmaops Developers (@rdmaops)
options:
  files:
    description:
      - The files, each a mapping of community.general.filetree's (C(path) under O(dest), C(src) on the
        controller, C(state); directories and links are left out) or a path on the controller (copied under
        its base name).
    type: list
    elements: raw
    required: true
  dest:
    description: The directory on the node; made if missing.
    type: path
    required: true
  stamp:
    description: Name of the stamp file in O(dest) that holds the digest of the last copy.
    type: str
    default: .rdmaops-source-digest
  owner:
    description: Owner of O(dest) and of what is extracted into it; root (the user that extracts) if unset.
    type: str
  group:
    description: Group of O(dest) and of what is extracted into it.
    type: str
attributes:
  action:
    description: The digest and the tar are made on the controller.
    support: full
  check_mode:
    description: Says whether the tree would be copied, and which files; changes nothing.
    support: full
  diff_mode:
    description: The stamp before and after; its per-file lines name the files that differ from the last copy.
    support: full
  platform:
    description: Linux nodes with GNU tar (unarchive's).
    support: full
    platforms: posix
"""

EXAMPLES = r"""
- name: Copy the trainer source where it differs from the last copy
  rdmaops.cluster.source_tree:
    files: "{{ query('community.general.filetree', 'files/trainer') }}"
    dest: /opt/rdmaops/venv/src/rdmaops-trainer
  register: trainer_copy
"""

RETURN = r"""
digest:
  description: sha256 of the tree (names and contents), hex; the stamp holds it after a copy.
  returned: always
  type: str
stamp:
  description: The digest the node's stamp held before this task; empty when it had none.
  returned: always
  type: str
files:
  description: The paths under O(dest) that the tree holds (copied when the task changed).
  returned: always
  type: list
  elements: str
dest:
  description: O(dest).
  returned: always
  type: str
"""

from ansible_collections.rdmaops.cluster.plugins.module_utils.phase_module import refuse_without_action
from ansible_collections.rdmaops.cluster.plugins.module_utils.site.source_tree import SOURCE_TREE_SPEC


def main() -> None:
    refuse_without_action("source_tree", SOURCE_TREE_SPEC)


if __name__ == "__main__":
    main()
