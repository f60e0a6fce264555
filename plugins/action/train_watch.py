# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin behind rdmaops.cluster.train_watch: runs on the controller, streams every node's agent over
SSH at once and prints progress while the task runs (documentation: plugins/modules/train_watch.py)."""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import time
from typing import Any

from ansible import constants as C
from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.rdmaops.cluster.plugins.module_utils.node.train import agent as train_agent
from ansible_collections.rdmaops.cluster.plugins.module_utils.train.watch import (
    TRAIN_WATCH_SPEC,
    JobWatch,
    Limits,
)
from ansible_collections.rdmaops.cluster.plugins.module_utils.train.watch_ssh import agent_argv, stop_argv
from ansible_collections.rdmaops.cluster.plugins.module_utils.train.watch_text import progress_line
from ansible_collections.rdmaops.cluster.plugins.plugin_utils.phase import task_args

display = Display()


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        p = task_args("train_watch", TRAIN_WATCH_SPEC, self._task.args)
        if self._play_context.check_mode:
            result.update(changed=False, skipped=True, msg="check mode: nothing was launched to watch")
            return result
        hostvars = task_vars.get("hostvars", {})
        with open(train_agent.__file__, encoding="utf-8") as fh:
            source = fh.read() + train_agent.ENTRY
        procs: dict[str, subprocess.Popen[bytes]] = {}
        sel = selectors.DefaultSelector()
        started = float(p["started"] or time.time())
        watch = JobWatch(
            p["job"],
            p["nodes"],
            total_steps=p["total_steps"],
            started=started,
            limits=Limits.from_params(p),
            cables=p["cables"],
        )
        buffers: dict[str, bytes] = {}
        try:
            for rank, node in enumerate(p["nodes"]):
                argv = agent_argv(
                    dict(hostvars.get(node, {})),
                    node,
                    unit=p["unit"],
                    metrics=p["metrics_file"] if rank == 0 else "",
                    log=p["log_file"],
                    interval=p["poll_interval"],
                    offset=p["metrics_offset"] if rank == 0 else 0,
                    events=p["events_file"],
                    ports=watch.cables.ports(node),
                )
                proc = subprocess.Popen(
                    argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
                )
                if proc.stdin is None or proc.stdout is None:
                    raise AnsibleActionFail(f"train_watch: could not start the agent for {node}")
                proc.stdin.write(source.encode())
                proc.stdin.close()
                os.set_blocking(proc.stdout.fileno(), False)
                sel.register(proc.stdout, selectors.EVENT_READ, node)
                procs[node] = proc
                buffers[node] = b""
            outcome = None
            while outcome is None:
                now = time.time()
                for key, _events in sel.select(timeout=1.0):
                    node = key.data
                    chunk = key.fileobj.read()  # type: ignore[union-attr]
                    now = time.time()
                    if not chunk:
                        sel.unregister(key.fileobj)
                        err = procs[node].stderr.read().decode(errors="replace").strip()  # type: ignore[union-attr]
                        watch.stream_ended(node, err.splitlines()[-1] if err else "", now)
                        continue
                    buffers[node] += chunk
                    *lines, buffers[node] = buffers[node].split(b"\n")
                    for line in lines:
                        try:
                            watch.feed(node, json.loads(line), now)
                        except ValueError:
                            continue
                # A lost cable is named as soon as an agent sees it. Not display.warning: an action plugin's
                # warnings are held back until its task ends (here: the job's end); a line on stderr is not.
                for text in watch.cables.take_news():
                    display.display(f"[WARNING]: {text}", color=C.COLOR_WARN, stderr=True)
                now = time.time()
                outcome = watch.decide(now)
                if watch.progress_due(now, p["progress_interval"], outcome):
                    display.display(progress_line(watch, now))
        finally:
            for proc in procs.values():
                if proc.poll() is None:
                    proc.terminate()
            for proc in procs.values():
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
            sel.close()
        now = time.time()
        if outcome.status != "succeeded" and p["stop_on_failure"] and not p["unit"].startswith("slurm:"):
            result["stopped"] = self._stop_everywhere(hostvars, p)
        result.update(changed=False, job=watch.report(now), **outcome.as_result())
        if outcome.warnings:
            result["warnings"] = list(outcome.warnings)
        if outcome.status != "succeeded":
            result["failed"] = True
        return result

    @staticmethod
    def _stop_everywhere(hostvars: dict[str, Any], p: dict[str, Any]) -> dict[str, str]:
        """``systemctl stop`` of the job's unit on every node at once, as soon as the verdict is known (the
        play stops the units again after this task; that one is then a no-op)."""
        procs = {
            node: subprocess.Popen(
                stop_argv(dict(hostvars.get(node, {})), node, p["unit"]),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            for node in p["nodes"]
        }
        deadline = time.time() + p["stop_timeout"] + 15
        out = {}
        for node, proc in procs.items():
            try:
                _o, err = proc.communicate(timeout=max(1.0, deadline - time.time()))
                out[node] = (
                    "stopped" if proc.returncode == 0 else (err.decode(errors="replace").strip() or "failed")
                )
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
                out[node] = "timed out"
        return out
