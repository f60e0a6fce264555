# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin behind rdmaops.cluster.mesh_network_plan: the mesh_network role's cluster phase, once per
run on the controller (documentation: plugins/modules/mesh_network_plan.py, rules:
module_utils/mesh/cluster.py)."""

from __future__ import annotations

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh.cluster import MESH_NETWORK_PLAN_SPEC, plan
from ansible_collections.rdmaops.cluster.plugins.plugin_utils.phase import PhaseAction


class ActionModule(PhaseAction):
    NAME = "mesh_network_plan"
    ARGUMENT_SPEC = MESH_NETWORK_PLAN_SPEC
    PHASE = plan
