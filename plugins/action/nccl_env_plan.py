# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin behind rdmaops.cluster.nccl_env_plan (documentation: plugins/modules/nccl_env_plan.py)."""

from __future__ import annotations

from ansible_collections.rdmaops.cluster.plugins.module_utils.nccl.phase import (
    NCCL_ENV_PLAN_SPEC,
    nccl_env_plan,
)
from ansible_collections.rdmaops.cluster.plugins.plugin_utils.phase import PhaseAction


class ActionModule(PhaseAction):
    NAME = "nccl_env_plan"
    ARGUMENT_SPEC = NCCL_ENV_PLAN_SPEC
    PHASE = nccl_env_plan
