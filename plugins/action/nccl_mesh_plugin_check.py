# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin behind rdmaops.cluster.nccl_mesh_plugin_check (documented in its doc-only module)."""

from __future__ import annotations

from ansible_collections.rdmaops.cluster.plugins.module_utils.nccl.phase import (
    NCCL_MESH_PLUGIN_CHECK_SPEC,
    nccl_mesh_plugin_check,
)
from ansible_collections.rdmaops.cluster.plugins.plugin_utils.phase import PhaseAction


class ActionModule(PhaseAction):
    NAME = "nccl_mesh_plugin_check"
    ARGUMENT_SPEC = NCCL_MESH_PLUGIN_CHECK_SPEC
    PHASE = nccl_mesh_plugin_check
