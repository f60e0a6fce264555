# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin behind rdmaops.cluster.verify_check:
the verify role's check phase (tasks/validate.yml), on the controller.

Documentation: plugins/modules/verify_check.py; rules: module_utils/verify/phase.py.
"""

from __future__ import annotations

from ansible_collections.rdmaops.cluster.plugins.module_utils.verify.phase import VERIFY_CHECK_SPEC, check
from ansible_collections.rdmaops.cluster.plugins.plugin_utils.phase import PhaseAction


class ActionModule(PhaseAction):
    NAME = "verify_check"
    ARGUMENT_SPEC = VERIFY_CHECK_SPEC
    PHASE = check
