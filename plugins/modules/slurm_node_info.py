#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: slurm_node_info
short_description: Read what Slurm needs to know about a node, in one pass
version_added: "0.1.0"
description:
  - Runs C(slurmd -C) (CPUs, boards, sockets, cores, threads and memory as slurmd itself detects them),
    C(slurmd -V), C(nvidia-smi -L), lists the GPU device files in C(/dev), judges whether Slurm's cgroup
    plugins can work on the node, and reads the current C(slurm.conf).
  - One module call instead of one task per probe, so a converged node is checked quickly.
  - Only reads; nothing on the node changes.
author:
  - Rdmaops Developers (@rdmaops)
options:
  conf_path:
    description: Where slurm.conf lives.
    type: path
    default: /etc/slurm/slurm.conf
  dev_root:
    description: Directory holding the GPU device files. Tests point this elsewhere.
    type: path
    default: /dev
attributes:
  check_mode:
    description: Only reads, so it runs and returns the same data in check mode.
    support: full
  diff_mode:
    description: Nothing changes, so there is no diff.
    support: none
  platform:
    description: Linux hosts.
    support: full
    platforms: posix
notes:
  - Without slurmd installed, RV(hardware) and RV(version) are null (check mode on a fresh node).
"""

EXAMPLES = r"""
- name: Read the node's hardware as slurmd sees it
  rdmaops.cluster.slurm_node_info:
  register: slurm_node

- name: Show the node definition slurmd detects
  ansible.builtin.debug:
    msg: >-
      {{ slurm_node.hardware.CPUs }} CPUs, {{ slurm_node.hardware.RealMemory }} MiB,
      {{ slurm_node.gpus }} GPUs
"""

RETURN = r"""
hardware:
  description: The fields of C(slurmd -C)'s NodeName line as numbers; null without slurmd.
  returned: always
  type: dict
  sample: {NodeName: node1, CPUs: 2, Boards: 1, SocketsPerBoard: 1, CoresPerSocket: 2, ThreadsPerCore: 1,
           RealMemory: 24036}
version:
  description: Slurm's version from C(slurmd -V), as numbers; null without slurmd.
  returned: always
  type: list
  elements: int
  sample: [22, 5, 8]
memory_mib:
  description: MemTotal of C(/proc/meminfo) in MiB, to check a declared memory before slurmd is installed.
  returned: always
  type: int
  sample: 24036
gpus:
  description: GPUs listed by C(nvidia-smi -L); 0 without nvidia-smi.
  returned: always
  type: int
  sample: 8
gpu_files:
  description: GPU device files (C(/dev/nvidiaN)) in minor order, for gres.conf.
  returned: always
  type: list
  elements: str
  sample: [/dev/nvidia0, /dev/nvidia1]
cgroup:
  description: Whether Slurm's cgroup plugins can work here (C(usable)) and why (C(why)).
  returned: always
  type: dict
  sample: {usable: false, why: "the node is a container (systemd-nspawn): its cgroups belong to the host"}
conf:
  description: The current slurm.conf text, null when absent.
  returned: always
  type: str
  sample: "ClusterName=rdmaops\n..."
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh.netplan_apply import read_file
from ansible_collections.rdmaops.cluster.plugins.module_utils.slurm.config import (
    SlurmError,
    cgroup_usable,
    count_gpus,
    gpu_files,
    parse_meminfo,
    parse_slurmd_c,
    parse_version,
)


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "conf_path": {"type": "path", "default": "/etc/slurm/slurm.conf"},
            "dev_root": {"type": "path", "default": "/dev"},
        },
        supports_check_mode=True,
    )
    result: dict = {"changed": False, "hardware": None, "version": None}
    slurmd = module.get_bin_path("slurmd")
    try:
        if slurmd:
            rc, out, err = module.run_command([slurmd, "-C"])
            if rc != 0:
                module.fail_json(msg=f"slurmd -C failed (rc {rc}): {err.strip() or out.strip()}")
            result["hardware"] = parse_slurmd_c(out)
            rc, out, err = module.run_command([slurmd, "-V"])
            result["version"] = parse_version(out + err)
    except SlurmError as exc:
        module.fail_json(msg=str(exc))

    try:
        result["memory_mib"] = parse_meminfo(read_file("/proc/meminfo") or "")
    except SlurmError as exc:
        module.fail_json(msg=str(exc))
    result["gpus"] = 0
    smi = module.get_bin_path("nvidia-smi")
    if smi:
        rc, out, err = module.run_command([smi, "-L"])
        # No driver loaded: nvidia-smi exits non-zero and there are no usable GPUs.
        result["gpus"] = count_gpus(out) if rc == 0 else 0
    try:
        names = os.listdir(module.params["dev_root"])
    except OSError:
        names = []
    result["gpu_files"] = gpu_files(names)

    virt = "none"
    detect = module.get_bin_path("systemd-detect-virt")
    if detect:
        rc, out, err = module.run_command([detect, "--container"])
        virt = out.strip() or "none"
    usable, why = cgroup_usable(read_file("/sys/fs/cgroup/cgroup.controllers"), virt)
    result["cgroup"] = {"usable": usable, "why": why}
    result["conf"] = read_file(module.params["conf_path"])
    module.exit_json(**result)


if __name__ == "__main__":
    main()
