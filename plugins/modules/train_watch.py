#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: train_watch
short_description: Follow a training job on every node until it ends, failed, hung or lost a node
version_added: "0.1.0"
description:
  - Runs on the controller (an action plugin). It opens one SSH stream per node with the host's inventory
    connection settings and runs a small agent there (Python standard library) that reports the job unit's
    state every O(poll_interval) seconds, and on node rank 0 the trainer's new metrics records.
  - Prints a progress line (step/total, loss, tokens/s, ETA, or "stalled for N s") at least every
    O(progress_interval) seconds while the task runs, and returns when the job succeeded on every node
    (a launcher killed after the last step only warns), any node's unit failed (the earliest failure is named
    with its node, rank and cause from the log), a launcher died while its ranks ran on (named with node,
    pid and signal), a rank stayed stopped for O(stopped_timeout), no step was logged for O(stall_timeout)
    seconds (named with what the process states show), or a node stopped answering for O(lost_timeout).
  - With O(stop_on_failure), on any verdict but success it stops the job's unit on every node at once
    (C(systemctl stop), through C(sudo -n) unless it logs in as root) before it returns, so that every rank is
    gone within seconds; the play stops the units again (see the train role). Slurm jobs are left to the play.
  - Use with C(run_once) and C(delegate_to) localhost; in check mode it returns at once.
author:
  - Rdmaops Developers (@rdmaops)
options:
  job:
    description: Job name, for messages.
    type: str
    required: true
  unit:
    description: The job's systemd unit on every node.
    type: str
    required: true
  nodes:
    description: Inventory names of the job's nodes in node-rank order (the first is the master).
    type: list
    elements: str
    required: true
  metrics_file:
    description: Rank 0's C(metrics.jsonl) on the master.
    type: str
    required: true
  metrics_offset:
    description: Size of O(metrics_file) before the launch; earlier records belong to an earlier run.
    type: int
    default: 0
  log_file:
    description: The job's log file on each node; its tail is returned for a failed node.
    type: str
    required: true
  events_file:
    description:
      - The process events that C(supervise.py), the unit's main process, writes on each node, naming the pids
        of the launcher and the ranks and how each ended. With it the agent also reports those processes'
        state and CPU time, so a launcher's death and a stopped rank are seen. Empty for Slurm jobs.
    type: str
    default: ''
  total_steps:
    description: Steps of the run (for the percentage and the ETA).
    type: int
    default: 0
  started:
    description: Launch time (seconds since the epoch); the start-up timeout counts from it. Default now.
    type: float
  stall_timeout:
    description: Seconds without a new step, eval or checkpoint record after which the job counts as hung.
    type: float
    default: 300.0
  stopped_timeout:
    description: Seconds a rank (or launcher) may stay stopped (state T) before the job counts as hung.
    type: float
    default: 10.0
  startup_timeout:
    description: Seconds from the launch to the first logged step before the job counts as hung.
    type: float
    default: 900.0
  lost_timeout:
    description: Seconds without a report from a node's agent before the node counts as lost.
    type: float
    default: 60.0
  failure_grace:
    description: After the first node fails with only a lost peer to say, seconds to wait for the others to
      end before the failure is named, so the rank that died first is named rather than a peer that lost its
      connection to it. A node that names a cause of its own is named at once.
    type: float
    default: 5.0
  stop_on_failure:
    description: On any verdict but success, stop the unit on every node before returning.
    type: bool
    default: false
  stop_timeout:
    description: Seconds the units take to stop at most (C(TimeoutStopSec)); the stop waits that and 15 s.
    type: float
    default: 30.0
  progress_interval:
    description: Seconds between progress lines.
    type: float
    default: 30.0
  poll_interval:
    description: Seconds between two reports of each node's agent.
    type: float
    default: 2.0
  cables:
    description:
      - Per node, the data ports whose cables the node's agent reads at every report (carrier, and the RDMA
        port's state behind a port), each a mapping with C(port), C(peer) (what the cable joins it to) and
        C(rerouted) (whether the cabling has another path between the two ends).
      - A cable that goes down is named at once as a warning (node, port, peer, the step), and again when it
        is back; a job that then fails or hangs names the lost cable first in its verdict.
    type: dict
    default: {}
attributes:
  action:
    description: Runs on the controller.
    support: full
  check_mode:
    description: Returns at once; nothing was launched to watch.
    support: full
  diff_mode:
    description: Nothing to compare.
    support: none
  platform:
    description: Nodes with systemd and Python 3, reached over SSH (or local connections).
    support: full
    platforms: posix
"""

EXAMPLES = r"""
- name: Follow the job until it ends
  rdmaops.cluster.train_watch:
    job: tiny
    unit: rdmaops-train-tiny.service
    nodes: "{{ ansible_play_hosts }}"
    metrics_file: /var/lib/rdmaops/train/tiny/runs/tiny/metrics.jsonl
    log_file: /var/log/rdmaops/train-tiny.log
    events_file: /var/log/rdmaops/train-tiny.events.jsonl
    total_steps: 200
    stall_timeout: 120
  run_once: true
  delegate_to: localhost
  register: train_result
"""

RETURN = r"""
status:
  description: V(succeeded), V(failed), V(hung) or V(lost).
  returned: always
  type: str
msg:
  description: The verdict, naming node, rank and cause on failure; the summary on success.
  returned: always
  type: str
node:
  description: The node named by the verdict.
  returned: always
  type: str
node_rank:
  description: Its node rank.
  returned: always
  type: int
rank:
  description: The global rank that failed first there, when the launcher's log says.
  returned: always
  type: int
log_tail:
  description: The last lines of the failed node's log.
  returned: always
  type: list
  elements: str
job:
  description: C(start), C(end), C(last_train) records, C(evals), C(checkpoints), per-node C(phase), C(unit)
    and C(exits) (the process exits C(supervise.py) recorded), C(wall_time_s).
  returned: always
  type: dict
stopped:
  description: Per node, V(stopped) or why not, when O(stop_on_failure) stopped the units.
  returned: when O(stop_on_failure) and the job did not succeed
  type: dict
warnings:
  description: What did not fail the job but should be known, such as a launcher killed after the last step.
  returned: when there are any
  type: list
  elements: str
"""

from ansible_collections.rdmaops.cluster.plugins.module_utils.phase_module import refuse_without_action
from ansible_collections.rdmaops.cluster.plugins.module_utils.train.watch import TRAIN_WATCH_SPEC


def main() -> None:
    refuse_without_action("train_watch", TRAIN_WATCH_SPEC)


if __name__ == "__main__":
    main()
