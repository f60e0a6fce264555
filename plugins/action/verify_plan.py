# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin behind rdmaops.cluster.verify_plan:
the verify role's links and rounds (tasks/links.yml), on the controller.

Documentation: plugins/modules/verify_plan.py; rules: module_utils/verify/phase.py.
"""

from __future__ import annotations

from ansible_collections.rdmaops.cluster.plugins.module_utils.verify.phase import (
    VERIFY_PLAN_SPEC,
    plan_phase,
)
from ansible_collections.rdmaops.cluster.plugins.plugin_utils.phase import PhaseAction


class ActionModule(PhaseAction):
    NAME = "verify_plan"
    ARGUMENT_SPEC = VERIFY_PLAN_SPEC
    PHASE = plan_phase
