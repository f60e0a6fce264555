# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin behind rdmaops.cluster.verify_summary:
the verify role's all-reduce and QoS summary (tasks/report.yml), on the controller.

Documentation: plugins/modules/verify_summary.py; rules: module_utils/verify/phase.py.
"""

from __future__ import annotations

from ansible_collections.rdmaops.cluster.plugins.module_utils.verify.phase import (
    VERIFY_SUMMARY_SPEC,
    summary,
)
from ansible_collections.rdmaops.cluster.plugins.plugin_utils.phase import PhaseAction


class ActionModule(PhaseAction):
    NAME = "verify_summary"
    ARGUMENT_SPEC = VERIFY_SUMMARY_SPEC
    PHASE = summary
