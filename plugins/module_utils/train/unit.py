# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The transient systemd unit that runs one node's part of a training job (plugins/modules/train_unit.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ansible_collections.rdmaops.cluster.plugins.module_utils.node.train.agent import SHOW_PROPERTIES

SHOW_ARGS = [f"--property={p}" for p in SHOW_PROPERTIES]
# The trainer's output goes to the journal and to the log file; pipefail keeps the launcher's exit status.
TEE_SCRIPT = 'set -o pipefail; "$@" 2>&1 | tee -a "$0"'


def systemd_run_argv(
    unit: str,
    argv: Sequence[str],
    *,
    description: str,
    workdir: str,
    environment: Mapping[str, str],
    log_file: str,
    stop_timeout: int,
    tee: bool = True,
) -> list[str]:
    """``systemd-run`` for a job's unit.

    RemainAfterExit keeps the exit status visible after a successful run (a transient unit is otherwise
    unloaded at once); KillMode=control-group ends every process of the job on stop, ranks that called setsid
    included; LimitMEMLOCK=infinity is what RDMA memory registration needs.
    """
    props = [
        "RemainAfterExit=yes",
        "KillMode=control-group",
        f"TimeoutStopSec={stop_timeout}",
        f"WorkingDirectory={workdir}",
        "LimitMEMLOCK=infinity",
        "LimitNOFILE=1048576",
    ]
    cmd = ["systemd-run", f"--unit={unit}", f"--description={description}"]
    cmd += [f"--property={p}" for p in props]
    cmd += [f"--setenv={k}={v}" for k, v in sorted(environment.items())]
    if not tee:
        return [*cmd, "--", *argv]
    return [*cmd, "--", "/bin/bash", "-c", TEE_SCRIPT, log_file, *argv]
