#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: python_env_plan
short_description: Check a node for the training venv and plan its profile, torch build and installs
version_added: "0.1.0"
description:
  - The rdmaops.cluster.python_env role's phase after it read the node (its interpreter, the wheelhouse,
    C(/sys/module/nvidia/version), C(dpkg-query) and the venv's distributions), before anything is installed.
  - Fails, with every error in one message each naming the node and the value, when the interpreter cannot
    be run or is older than O(python_min), the wheelhouse is not a directory there, the V(cuda) profile finds
    no NVIDIA driver loaded, or the driver is older than every CUDA build of O(torch_cuda_variants).
  - Plans the profile (V(auto) is V(cuda) where the driver is loaded), the torch build (the newest variant
    the driver supports, as the filter rdmaops.cluster.torch_cuda_variant picks it), the pins in their
    install groups and those the venv does not meet yet, the distribution packages missing, and the digest
    of the trainer source.
author:
  - Rdmaops Developers (@rdmaops)
options:
  host:
    description: The node, for messages.
    type: str
    required: true
  python:
    description: The interpreter the venv is made from.
    type: str
    required: true
  python_min:
    description: The oldest interpreter version accepted.
    type: str
    required: true
  python_rc:
    description: Exit status of C(python -c) printing its version.
    type: int
    required: true
  python_version:
    description: The version it printed.
    type: str
    default: ""
  python_error:
    description: Why it could not be run.
    type: str
    default: ""
  wheelhouse:
    description: The wheelhouse directory; empty for the package indexes.
    type: str
    default: ""
  wheelhouse_isdir:
    description: Whether O(wheelhouse) is a directory on the node.
    type: bool
    default: false
  profile:
    description: V(cpu), V(cuda), or V(auto) (V(cuda) where the NVIDIA driver is loaded).
    type: str
    choices: [auto, cpu, cuda]
    default: auto
  driver:
    description: The text of C(/sys/module/nvidia/version); null where the driver is not loaded.
    type: str
  torch_cuda_variants:
    description: The CUDA builds published for the torch release.
    type: list
    elements: str
    required: true
  torch_index_base:
    description: Base URL of the PyTorch wheel indexes.
    type: str
    default: https://download.pytorch.org/whl
  torch_version:
    description: The torch release.
    type: str
    required: true
  deepspeed_version:
    description: The deepspeed release.
    type: str
    required: true
  setuptools_version:
    description: The setuptools release.
    type: str
    required: true
  packages:
    description: The exact pins installed with torch.
    type: list
    elements: str
    default: []
  os_packages:
    description: Distribution packages of every profile.
    type: list
    elements: str
    default: []
  jit_os_packages:
    description: Distribution packages of the V(cuda) profile only.
    type: list
    elements: str
    default: []
  dpkg_lines:
    description: C(dpkg-query -W -f='${Package} ${db:Status-Status}\n') of both package lists.
    type: list
    elements: str
    default: []
  installed_rc:
    description: Exit status of the venv's listing (non-zero before the venv exists).
    type: int
    default: 1
  installed:
    description: The venv's distributions, JSON of name to version (C(importlib.metadata)).
    type: str
    default: ""
  trainer_tree:
    description: The trainer source as community.general.filetree lists it; empty when it is not installed.
    type: list
    elements: raw
    default: []
extends_documentation_fragment:
  - rdmaops.cluster.phase
"""

EXAMPLES = r"""
- name: Check the node and plan the profile, the torch build and what to install
  rdmaops.cluster.python_env_plan:
    host: "{{ inventory_hostname }}"
    python: /usr/bin/python3
    python_min: "3.10"
    python_rc: 0
    python_version: 3.11.2
    driver: "{{ driver_file.content | b64decode if driver_file.content is defined else None }}"
    torch_cuda_variants: [cu126, cu128, cu130]
    torch_version: 2.13.0
    deepspeed_version: 0.19.8
    setuptools_version: 84.2.1
    packages: [numpy==2.4.6]
    os_packages: [python3-venv]
    dpkg_lines: "{{ dpkg.stdout_lines }}"
  register: python_env_plan
"""

RETURN = r"""
errors:
  description: Every error found, each naming the node and the value; empty when the task succeeds.
  returned: always
  type: list
  elements: str
plan:
  description: What to install.
  returned: always
  type: dict
  contains:
    profile:
      description: V(cpu) or V(cuda).
      type: str
    torch_build:
      description: The torch build for the driver (as the filter rdmaops.cluster.torch_cuda_variant returns
        it); empty for V(cpu).
      type: dict
      sample: {variant: cu128, cuda: "12.8", driver: 570.124.06, min_driver: "570.26",
               index_url: "https://download.pytorch.org/whl/cu128"}
    torch_pin:
      description: The torch pin with its build, C(torch==2.13.0+cpu).
      type: str
    torch_index_url:
      description: The wheel index of that build.
      type: str
    pins:
      description: The pins by install group, C(setuptools), C(pinned) (torch first) and C(deepspeed).
      type: dict
    unmet:
      description: Per group, the pins the venv does not meet yet.
      type: dict
      sample: {setuptools: [], pinned: ["torch==2.13.0+cpu"], deepspeed: []}
    installed:
      description: The venv's distributions, name to version; empty before the venv exists.
      type: dict
    wanted_os_packages:
      description: The distribution packages of the profile.
      type: list
      elements: str
    missing_os_packages:
      description: Those dpkg does not list as installed.
      type: list
      elements: str
    trainer_digest:
      description: Digest of the trainer source (names and contents); empty when it is not installed.
      type: str
"""

from ansible_collections.rdmaops.cluster.plugins.module_utils.phase_module import refuse_without_action
from ansible_collections.rdmaops.cluster.plugins.module_utils.python_env.phase import PYTHON_ENV_PLAN_SPEC


def main() -> None:
    refuse_without_action("python_env_plan", PYTHON_ENV_PLAN_SPEC)


if __name__ == "__main__":
    main()
