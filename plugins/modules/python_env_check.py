#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: python_env_check
short_description: Check the settings of the training venv before a node is read or changed
version_added: "0.1.0"
description:
  - The rdmaops.cluster.python_env role's C(tasks/validate.yml), before the node is read.
  - Fails, with every error in one message each naming its value, when the venv path is not absolute or
    ends in a slash, the profile is not V(auto), V(cpu) or V(cuda), a version is not of its form, the CUDA
    variants are empty, the wheelhouse is not absolute, or a package is not pinned exactly (C(name==version)).
author:
  - Rdmaops Developers (@rdmaops)
options:
  path:
    description: C(python_env_path), absolute, no trailing slash.
    type: raw
    required: true
  profile:
    description: C(python_env_profile), V(auto), V(cpu) or V(cuda).
    type: raw
    required: true
  python_min:
    description: C(python_env_python_min), like C(3.10).
    type: raw
    required: true
  torch_version:
    description: C(python_env_torch_version), like C(2.13.0).
    type: raw
    required: true
  deepspeed_version:
    description: C(python_env_deepspeed_version), like C(0.19.8).
    type: raw
    required: true
  setuptools_version:
    description: C(python_env_setuptools_version), dotted numbers.
    type: raw
    required: true
  torch_cuda_variants:
    description: C(python_env_torch_cuda_variants), a non-empty list.
    type: raw
    required: true
  wheelhouse:
    description: C(python_env_wheelhouse), absolute or empty.
    type: raw
    default: ""
  packages:
    description: C(python_env_packages) and C(python_env_extra_packages), each C(name==version).
    type: raw
    default: []
extends_documentation_fragment:
  - rdmaops.cluster.phase
"""

EXAMPLES = r"""
- name: Check the venv's settings
  rdmaops.cluster.python_env_check:
    path: /opt/rdmaops/venv
    profile: auto
    python_min: "3.10"
    torch_version: 2.13.0
    deepspeed_version: 0.19.8
    setuptools_version: 84.2.1
    torch_cuda_variants: [cu126, cu128, cu130]
    packages: [numpy==2.4.6, PyYAML==6.0.3]
"""

RETURN = r"""
errors:
  description: Every bad setting or unpinned package, each naming its value; empty when the task succeeds.
  returned: always
  type: list
  elements: str
plan:
  description: Empty; the plan needs the node (rdmaops.cluster.python_env_plan).
  returned: always
  type: dict
"""

from ansible_collections.rdmaops.cluster.plugins.module_utils.phase_module import refuse_without_action
from ansible_collections.rdmaops.cluster.plugins.module_utils.python_env.phase import PYTHON_ENV_CHECK_SPEC


def main() -> None:
    refuse_without_action("python_env_check", PYTHON_ENV_CHECK_SPEC)


if __name__ == "__main__":
    main()
