#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: train_unit
short_description: Start, stop or inspect one node's part of a training job as a transient systemd unit
version_added: "0.1.0"
description:
  - Runs a node's launcher command (torchrun or the DeepSpeed launcher) as the transient unit
    C(rdmaops-train-<job>.service) with C(systemd-run), so it survives the SSH session, logs to the journal
    and to a log file, and stopping it ends the whole process tree (C(KillMode=control-group)).
  - The unit keeps its exit status after the job ends (C(RemainAfterExit=yes)), so status playbooks can tell
    a finished job from a failed one; the next launch of the same job clears it.
  - With O(wait_port), returns once the port listens on this node (the rendezvous store of node rank 0), or
    fails as soon as the unit fails, with the tail of its log.
author:
  - Rdmaops Developers (@rdmaops)
options:
  job:
    description: Job name; the unit is C(rdmaops-train-<job>.service).
    type: str
    required: true
  state:
    description:
      - V(started) launches (fails if the job already runs on this node), V(stopped) stops it and clears its
        state, V(status) only reports.
    type: str
    choices: [started, stopped, status]
    default: status
  argv:
    description: The command to run (V(started)).
    type: list
    elements: str
    default: []
  workdir:
    description: Working directory of the command; created if missing (V(started)).
    type: path
  files:
    description:
      - Files to write before the launch (V(started)), path to content, such as the job's description and
        DeepSpeed's hostfile; their directories are created. Each is replaced as a whole (written aside,
        then renamed).
    type: dict
    default: {}
  environment:
    description: Environment of the command (V(started)); the values are passed to C(systemd-run --setenv).
    type: dict
    default: {}
  log_file:
    description: The command's output is appended here as well as to the journal; its tail is returned.
    type: path
    required: true
  tee:
    description:
      - Append the command's output to O(log_file) through C(bash | tee). V(false) when the command writes
        O(log_file) and the journal itself (train.yml's C(supervise.py)), so that the unit's main process is
        the command.
    type: bool
    default: true
  description:
    description: The unit's description (C(systemctl status)); empty gives C(rdmaops training job <job>).
    type: str
    default: ''
  metrics_file:
    description: The trainer's C(metrics.jsonl); its size before the launch is returned as RV(metrics_offset).
    type: path
  wait_port:
    description: With V(started), wait until this TCP port listens on the node (0 does not wait).
    type: int
    default: 0
  wait_timeout:
    description: Seconds to wait for O(wait_port).
    type: int
    default: 120
  stop_timeout:
    description: Seconds between SIGTERM and SIGKILL when the unit is stopped (C(TimeoutStopSec)).
    type: int
    default: 15
  tail_lines:
    description: Lines of the log returned as RV(log_tail).
    type: int
    default: 40
attributes:
  check_mode:
    description: Reports what would start or stop and changes nothing.
    support: full
  diff_mode:
    description: Nothing to compare.
    support: none
  platform:
    description: Hosts with systemd.
    support: full
    platforms: posix
"""

EXAMPLES = r"""
- name: Start node rank 0 and wait for its rendezvous port
  rdmaops.cluster.train_unit:
    job: tiny
    state: started
    argv: [/opt/rdmaops/venv/bin/python, -m, torch.distributed.run, --nnodes=3, --node-rank=0, "..."]
    workdir: /var/lib/rdmaops/train/tiny
    environment: {GLOO_SOCKET_IFNAME: nodeaddr0}
    files: {/var/lib/rdmaops/train/tiny/job.json: '{"job": "tiny"}'}
    log_file: /var/log/rdmaops/train-tiny.log
    wait_port: 29500

- name: Stop the job on every node
  rdmaops.cluster.train_unit:
    job: tiny
    state: stopped
    log_file: /var/log/rdmaops/train-tiny.log
"""

RETURN = r"""
unit:
  description: The unit's name.
  returned: always
  type: str
  sample: rdmaops-train-tiny.service
phase:
  description: V(running), V(succeeded), V(failed) or V(absent), after the action.
  returned: always
  type: str
previous_phase:
  description: The phase before the action.
  returned: always
  type: str
properties:
  description: The unit's systemd properties (C(ActiveState), C(SubState), C(Result), C(ExecMainStatus), ...).
  returned: always
  type: dict
log_tail:
  description: The last O(tail_lines) lines of O(log_file).
  returned: always
  type: list
  elements: str
metrics_offset:
  description: Size of O(metrics_file) before the launch (the watcher reads only what this run appends).
  returned: when O(state=started) and O(metrics_file) is set
  type: int
last_metrics:
  description: The last record of each event (C(start), C(train), C(eval), C(checkpoint), C(end)) of the
    current run in O(metrics_file).
  returned: when O(metrics_file) exists
  type: dict
started:
  description: Wall-clock time of the launch on this node (seconds since the epoch).
  returned: when O(state=started)
  type: float
"""

import os
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.rdmaops.cluster.plugins.module_utils.node.train.agent import (
    RUN_MARKER,
    last_records,
    parse_show,
    tail,
    unit_phase,
)
from ansible_collections.rdmaops.cluster.plugins.module_utils.train.launch import (
    LaunchError,
    command_line,
    unit_name,
)
from ansible_collections.rdmaops.cluster.plugins.module_utils.train.preflight import node_listening_ports
from ansible_collections.rdmaops.cluster.plugins.module_utils.train.unit import (
    SHOW_ARGS,
    systemd_run_argv,
)


def show(module: AnsibleModule, unit: str) -> dict[str, str]:
    rc, out, err = module.run_command(["systemctl", "show", unit, *SHOW_ARGS])
    if rc != 0:
        module.fail_json(msg=f"systemctl show {unit}: {err.strip() or out.strip()}")
    return parse_show(out)


def write_file(path: str, content: str) -> None:
    os.makedirs(os.path.dirname(path) or "/", exist_ok=True)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(content)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "job": {"type": "str", "required": True},
            "state": {"type": "str", "choices": ["started", "stopped", "status"], "default": "status"},
            "argv": {"type": "list", "elements": "str", "default": []},
            "workdir": {"type": "path"},
            "environment": {"type": "dict", "default": {}},
            "files": {"type": "dict", "default": {}},
            "log_file": {"type": "path", "required": True},
            "tee": {"type": "bool", "default": True},
            "description": {"type": "str", "default": ""},
            "metrics_file": {"type": "path"},
            "wait_port": {"type": "int", "default": 0},
            "wait_timeout": {"type": "int", "default": 120},
            "stop_timeout": {"type": "int", "default": 15},
            "tail_lines": {"type": "int", "default": 40},
        },
        required_if=[("state", "started", ("argv", "workdir"))],
        supports_check_mode=True,
    )
    p = module.params
    try:
        unit = unit_name(p["job"])
    except LaunchError as exc:
        module.fail_json(msg=str(exc))
    before = show(module, unit)
    previous = unit_phase(before)
    result = {"unit": unit, "previous_phase": previous, "changed": False}

    def finish(**extra: object) -> None:
        props = show(module, unit) if not module.check_mode else before
        if p["metrics_file"] and os.path.isfile(p["metrics_file"]):
            result["last_metrics"] = last_records(p["metrics_file"])
        module.exit_json(
            phase=unit_phase(props), properties=props, log_tail=tail(p["log_file"], p["tail_lines"]),
            **result, **extra,
        )  # fmt: skip

    if p["state"] == "status":
        finish()

    if p["state"] == "stopped":
        loaded = before.get("LoadState") == "loaded"
        result["changed"] = previous == "running" or loaded
        if module.check_mode or not loaded:
            finish()
        # stop: SIGTERM (and SIGCONT, so a frozen rank handles it) to every process, SIGKILL after the timeout
        module.run_command(["systemctl", "stop", unit])
        module.run_command(["systemctl", "reset-failed", unit])
        finish()

    if previous == "running":
        module.fail_json(
            msg=f"job {p['job']} is already running on this node ({unit}, since "
            f"{before.get('ActiveEnterTimestamp') or '?'}): stop it first (playbooks/train_stop.yml)",
            **result,
        )
    result["changed"] = True
    if module.check_mode:
        finish()
    if before.get("LoadState") == "loaded":  # a finished or failed run of the same job
        module.run_command(["systemctl", "stop", unit])
        module.run_command(["systemctl", "reset-failed", unit])
    os.makedirs(p["workdir"], exist_ok=True)
    os.makedirs(os.path.dirname(p["log_file"]) or "/", exist_ok=True)
    for path, content in p["files"].items():
        try:
            write_file(path, str(content))
        except OSError as exc:
            module.fail_json(msg=f"writing {path} before the launch: {exc}", **result)
    offset = 0
    if p["metrics_file"] and os.path.isfile(p["metrics_file"]):
        offset = os.path.getsize(p["metrics_file"])
    started = time.time()
    with open(p["log_file"], "a", encoding="utf-8") as fh:
        fh.write(f"{RUN_MARKER}{p['job']}: {time.strftime('%Y-%m-%d %H:%M:%S %z')}\n")
        fh.write(f"=== {command_line(p['argv'])}\n")
    argv = systemd_run_argv(
        unit,
        p["argv"],
        description=p["description"] or f"rdmaops training job {p['job']}",
        workdir=p["workdir"],
        environment={k: str(v) for k, v in p["environment"].items()},
        log_file=p["log_file"],
        stop_timeout=p["stop_timeout"],
        tee=p["tee"],
    )
    rc, out, err = module.run_command(argv)
    if rc != 0:
        module.fail_json(msg=f"systemd-run failed for {unit}: {err.strip() or out.strip()}", **result)
    if p["wait_port"]:
        deadline = time.time() + p["wait_timeout"]
        while True:
            props = show(module, unit)
            phase = unit_phase(props)
            if phase != "running":
                module.fail_json(
                    msg=f"{unit} ended ({phase}, exit status {props.get('ExecMainStatus')}) before port "
                    f"{p['wait_port']} listened; the log's last lines are in log_tail",
                    log_tail=tail(p["log_file"], p["tail_lines"]),
                    properties=props,
                    **result,
                )
            if p["wait_port"] in node_listening_ports():
                break
            if time.time() > deadline:
                module.fail_json(
                    msg=f"port {p['wait_port']} did not listen within {p['wait_timeout']} s of starting "
                    f"{unit}",
                    log_tail=tail(p["log_file"], p["tail_lines"]),
                    **result,
                )
            time.sleep(0.2)
    finish(metrics_offset=offset, started=started)


if __name__ == "__main__":
    main()
