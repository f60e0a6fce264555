# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin behind rdmaops.cluster.train_plan (documentation: plugins/modules/train_plan.py)."""

from __future__ import annotations

from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.train.phase import TRAIN_PLAN_SPEC, plan
from ansible_collections.rdmaops.cluster.plugins.plugin_utils.phase import PhaseAction


class ActionModule(PhaseAction):
    NAME = "train_plan"
    ARGUMENT_SPEC = TRAIN_PLAN_SPEC
    PHASE = plan

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        if result.get("failed"):
            # the errors are the preflight's, one per problem, each naming its node
            count = len(result["errors"])
            result["msg"] = f"train preflight: {count} problem(s), nothing was launched: {result['msg']}"
        return result
