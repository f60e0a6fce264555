#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: site_digest
short_description: Digest a run's inputs, the inventory as written, the extra vars and the collection's code
version_added: "0.1.0"
description:
  - The first task of site.yml's fast path; runs on the controller (an action plugin) and changes nothing.
    Module rdmaops.cluster.site_stamp records the digest on every node at the end of a converge and compares
    it on the next run.
  - Reads every host of O(hosts)'s variables as written (untemplated), less what changes with the machine,
    the mode or the command line of a run (C(ansible_check_mode), C(playbook_dir), facts, ...), and the
    files under O(code_root) of O(code_parts) without build artefacts.
  - Run it before any task of the play registers or sets a variable, with C(run_once); those are host
    variables too and would enter the digest.
author:
  - Rdmaops Developers (@rdmaops)
options:
  hosts:
    description: The hosts whose variables count, in inventory order (C(groups['all'])).
    type: list
    elements: str
    required: true
  code_root:
    description: The collection's root.
    type: path
    required: true
  code_parts:
    description: The files and directories under O(code_root) whose content counts.
    type: list
    elements: str
    default: [roles, plugins, playbooks, files]
extends_documentation_fragment:
  - rdmaops.cluster.phase
"""

EXAMPLES = r"""
- name: Digest the inventory of every host, the extra vars and the collection's code
  rdmaops.cluster.site_digest:
    hosts: "{{ groups['all'] }}"
    code_root: "{{ playbook_dir | dirname }}"
  register: rdmaops_site_digest
  run_once: true
"""

RETURN = r"""
digest:
  description: sha256 of the inputs, hex.
  returned: success
  type: str
  sample: 9f2c1e0b7d4a...
"""

from ansible_collections.rdmaops.cluster.plugins.module_utils.phase_module import refuse_without_action
from ansible_collections.rdmaops.cluster.plugins.module_utils.site.stamp import SITE_DIGEST_SPEC


def main() -> None:
    refuse_without_action("site_digest", SITE_DIGEST_SPEC)


if __name__ == "__main__":
    main()
