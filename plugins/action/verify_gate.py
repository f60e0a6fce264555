# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin behind rdmaops.cluster.verify_gate:
the verify role's RDMA port gate (tasks/gate.yml), on the controller.

Documentation: plugins/modules/verify_gate.py; rules: module_utils/verify/phase.py.
"""

from __future__ import annotations

from ansible_collections.rdmaops.cluster.plugins.module_utils.verify.phase import VERIFY_GATE_SPEC, gate
from ansible_collections.rdmaops.cluster.plugins.plugin_utils.phase import PhaseAction


class ActionModule(PhaseAction):
    NAME = "verify_gate"
    ARGUMENT_SPEC = VERIFY_GATE_SPEC
    PHASE = gate
