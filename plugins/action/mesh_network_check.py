# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin behind rdmaops.cluster.mesh_network_check: the mesh_network role's check phase on the
controller (documentation: plugins/modules/mesh_network_check.py, rules: module_utils/mesh/phase.py)."""

from __future__ import annotations

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh.phase import MESH_NETWORK_CHECK_SPEC, check
from ansible_collections.rdmaops.cluster.plugins.plugin_utils.phase import PhaseAction


class ActionModule(PhaseAction):
    NAME = "mesh_network_check"
    ARGUMENT_SPEC = MESH_NETWORK_CHECK_SPEC
    PHASE = check
