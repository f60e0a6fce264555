#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: train_preflight
short_description: Report what a node offers a training job, for train.yml's preflight
version_added: "0.1.0"
description:
  - Reads and changes nothing. It reports the venv's versions (Python, torch, NCCL, DeepSpeed, the trainer,
    transformers; from package metadata, without importing torch), the GPUs visible, the NCCL/gloo
    environment file and the state and IPv4 address of the interfaces it names, fingerprints of the recipe's
    input paths (sha256 of small files, size and mtime of large ones), whether the rendezvous port listens,
    the job's unit, free disk where the output goes, and the checkpoints already there.
  - When C(nvidia-smi) is on the PATH it also reports C(nvidia-smi topo -m), for the GPU-to-NIC affinity in
    the preflight notes.
  - The controller compares every node's report in one go (action
    M(rdmaops.cluster.train_plan)), so one run lists every problem with its node, value and fix.
author:
  - Rdmaops Developers (@rdmaops)
options:
  venv:
    description: The cluster venv (python_env_path).
    type: path
    required: true
  env_file:
    description: The NCCL/gloo environment file written by the nccl_env role; a missing file is reported.
    type: path
    required: true
  paths:
    description: Recipe inputs, each C({what, path}) (C(paths) of the plan of M(rdmaops.cluster.train_check)).
    type: list
    elements: dict
    default: []
  output_dir:
    description: Where the job writes metrics and checkpoints.
    type: path
    required: true
  job:
    description: Job name (its unit is C(rdmaops-train-<job>.service)).
    type: str
    required: true
  port:
    description: Rendezvous port to report as listening or not.
    type: int
    required: true
  shared_marker:
    description:
      - A file name in O(output_dir) that tells shared storage; reported as RV(shared_marker) when it holds
        O(shared_token).
    type: str
    default: ""
  shared_token:
    description: The content of O(shared_marker) that this launch expects (a fresh value per launch).
    type: str
    default: ""
  model_config:
    description:
      - The recipe's transformers model C(config.json) (empty for a model without one); its content is
        returned as RV(model_config) for the memory estimate.
    type: str
    default: ""
  write_marker:
    description:
      - Create O(output_dir) and write O(shared_token) to O(shared_marker) first (on the master; the other
        nodes then look for it). The marker stays and is overwritten by the next launch.
    type: bool
    default: false
attributes:
  check_mode:
    description: Reads only in check mode (no marker is written, so no node reports shared storage).
    support: full
  diff_mode:
    description: Nothing to compare.
    support: none
  platform:
    description: Linux hosts with systemd and iproute2.
    support: full
    platforms: posix
"""

EXAMPLES = r"""
- name: Report this node's side of the job
  rdmaops.cluster.train_preflight:
    venv: /opt/rdmaops/venv
    env_file: /etc/rdmaops/nccl.env
    paths: [{what: model.path, path: /shared/models/GLM-4.5-Air}]
    output_dir: /var/lib/rdmaops/train/glm/runs/glm
    job: glm
    port: 29500
  register: train_node
"""

RETURN = r"""
venv:
  description: C({path, exists}).
  returned: always
  type: dict
versions:
  description: C(python), C(torch), C(nccl), C(deepspeed), C(trainer), C(transformers) (null when absent).
  returned: when the venv exists
  type: dict
gpus:
  description: NVIDIA GPUs visible to the driver (0 without one).
  returned: always
  type: int
gpu_memory_mib:
  description:
    - Each GPU's memory in MiB (C(nvidia-smi --query-gpu=memory.total)); empty without GPUs or nvidia-smi.
  returned: always
  type: list
  elements: int
model_config:
  description: The content of O(model_config) (a JSON mapping), when it exists and is at most 1 MiB.
  returned: when O(model_config) is readable
  type: dict
env:
  description: The variables of O(env_file).
  returned: always
  type: dict
interfaces:
  description: Per interface named in the environment, C({exists, up, ipv4}).
  returned: always
  type: dict
rdma_ports:
  description:
    - Every port of every RDMA device in C(/sys/class/infiniband), C({device, port, active, rate_gbps}) (empty
      without RDMA). The plan compares the slowest port NCCL may use with C(train_hsdp_rdma_below_gbps).
  returned: always
  type: list
  elements: dict
gpu_topology:
  description:
    - C(nvidia-smi topo -m)'s C(rc), C(stdout) and C(stderr); C(rc) 127 (the shell's "not found") when there
      is no C(nvidia-smi) (a node without GPUs). The plan reads each GPU's nearest NIC from it.
  returned: always
  type: dict
address:
  description: First IPv4 address of the first interface named there (what the other ranks dial), or empty.
  returned: always
  type: str
hostname:
  description: The short host name, as Slurm names the node (launcher=slurm maps it to the address).
  returned: always
  type: str
  sample: node1
paths:
  description: Per input path, C({what, path, exists, files, bytes, fingerprint}).
  returned: always
  type: list
  elements: dict
listening:
  description: O(port) if something listens on it, else empty.
  returned: always
  type: list
  elements: int
unit:
  description: The job unit's systemd properties.
  returned: always
  type: dict
disk:
  description: C([existing path checked, free GB]).
  returned: always
  type: list
checkpoints:
  description: C({complete, partial, finished_step}) for O(output_dir).
  returned: always
  type: dict
shared_marker:
  description: Whether O(shared_marker) in O(output_dir) holds O(shared_token).
  returned: always
  type: bool
"""

import glob
import json
import os
import socket

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.rdmaops.cluster.plugins.module_utils.nccl.affinity import NOT_FOUND_RC
from ansible_collections.rdmaops.cluster.plugins.module_utils.nccl.env_file import parse as parse_env_file
from ansible_collections.rdmaops.cluster.plugins.module_utils.node.rdma.sysfs import read_ports
from ansible_collections.rdmaops.cluster.plugins.module_utils.node.train.agent import parse_show
from ansible_collections.rdmaops.cluster.plugins.module_utils.train.gpus import (
    MEMORY_QUERY,
    parse_memory_total,
)
from ansible_collections.rdmaops.cluster.plugins.module_utils.train.launch import LaunchError, unit_name
from ansible_collections.rdmaops.cluster.plugins.module_utils.train.preflight import (
    VERSION_PROBE,
    checkpoints,
    fingerprint,
    free_gb,
    interface_state,
    node_listening_ports,
    parse_ifnames,
)
from ansible_collections.rdmaops.cluster.plugins.module_utils.train.unit import SHOW_ARGS


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "venv": {"type": "path", "required": True},
            "env_file": {"type": "path", "required": True},
            "paths": {"type": "list", "elements": "dict", "default": []},
            "output_dir": {"type": "path", "required": True},
            "job": {"type": "str", "required": True},
            "port": {"type": "int", "required": True},
            "shared_marker": {"type": "str", "default": ""},
            "shared_token": {"type": "str", "default": "", "no_log": False},
            "write_marker": {"type": "bool", "default": False},
            "model_config": {"type": "str", "default": ""},
        },
        required_if=[("write_marker", True, ("shared_marker", "shared_token"))],
        supports_check_mode=True,
    )
    p = module.params
    try:
        unit = unit_name(p["job"])
    except LaunchError as exc:
        module.fail_json(msg=str(exc))
    result: dict = {"changed": False}
    marker = os.path.join(p["output_dir"], p["shared_marker"]) if p["shared_marker"] else ""
    if p["write_marker"] and not module.check_mode:
        try:
            os.makedirs(p["output_dir"], exist_ok=True)
            with open(marker, "w", encoding="utf-8") as fh:
                fh.write(p["shared_token"] + "\n")
        except OSError as exc:
            module.fail_json(msg=f"writing the shared-storage mark {marker}: {exc}")

    python = os.path.join(p["venv"], "bin", "python")
    result["venv"] = {"path": p["venv"], "exists": os.access(python, os.X_OK)}
    if result["venv"]["exists"]:
        rc, out, err = module.run_command([python, "-c", VERSION_PROBE])
        if rc != 0:
            module.fail_json(msg=f"{python} could not report its versions: {err.strip()}")
        result["versions"] = json.loads(out)
    # /proc/driver/nvidia/gpus has one entry per GPU the driver sees: no nvidia-smi, no torch needed.
    result["gpus"] = len(glob.glob("/proc/driver/nvidia/gpus/*"))
    smi = module.get_bin_path("nvidia-smi")
    if smi:
        rc, out, err = module.run_command([smi, "topo", "-m"])
        result["gpu_topology"] = {"rc": rc, "stdout": out, "stderr": err}
    else:
        result["gpu_topology"] = {"rc": NOT_FOUND_RC, "stdout": "", "stderr": "nvidia-smi: not found"}
    result["gpu_memory_mib"] = []
    if smi and result["gpus"]:
        rc, out, _err = module.run_command([smi, *MEMORY_QUERY[1:]])
        result["gpu_memory_mib"] = parse_memory_total(out) if rc == 0 else []
    if (
        p["model_config"]
        and os.path.isfile(p["model_config"])
        and os.path.getsize(p["model_config"]) <= 2**20
    ):
        try:
            with open(p["model_config"], encoding="utf-8") as fh:
                config = json.load(fh)
        except (OSError, ValueError):
            config = None
        if isinstance(config, dict):
            result["model_config"] = config

    env: dict[str, str] = {}
    if os.path.isfile(p["env_file"]):
        with open(p["env_file"], encoding="utf-8") as fh:
            env = parse_env_file(fh.read())
    result["env"] = env
    result["env_file"] = p["env_file"] if os.path.isfile(p["env_file"]) else f"{p['env_file']} (missing)"
    names = parse_ifnames(env)
    rc, out, err = module.run_command(["ip", "-j", "addr", "show"])
    links = json.loads(out) if rc == 0 and out.strip() else []
    result["interfaces"] = interface_state(links, names)
    result["rdma_ports"] = [
        {key: port[key] for key in ("device", "port", "active", "rate_gbps")} for port in read_ports()
    ]
    result["hostname"] = socket.gethostname().split(".")[0]
    result["address"] = next((st["ipv4"][0] for st in result["interfaces"].values() if st.get("ipv4")), "")

    try:
        result["paths"] = [{**item, **fingerprint(str(item["path"]))} for item in p["paths"]]
    except (OSError, ValueError) as exc:
        module.fail_json(msg=f"reading the recipe's inputs: {exc}")
    result["listening"] = [p["port"]] if p["port"] in node_listening_ports() else []
    rc, out, err = module.run_command(["systemctl", "show", unit, *SHOW_ARGS])
    result["unit"] = parse_show(out) if rc == 0 else {}
    result["disk"] = list(free_gb(p["output_dir"]))
    result["checkpoints"] = checkpoints(p["output_dir"])
    result["shared_marker"] = False
    if marker and os.path.isfile(marker):
        with open(marker, encoding="utf-8", errors="replace") as fh:
            result["shared_marker"] = fh.read().strip() == p["shared_token"]
    module.exit_json(**result)


if __name__ == "__main__":
    main()
