# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin behind rdmaops.cluster.rdma_check (documentation: plugins/modules/rdma_check.py)."""

from __future__ import annotations

from ansible_collections.rdmaops.cluster.plugins.module_utils.rdma.phase import RDMA_CHECK_SPEC, rdma_check
from ansible_collections.rdmaops.cluster.plugins.plugin_utils.phase import PhaseAction


class ActionModule(PhaseAction):
    NAME = "rdma_check"
    ARGUMENT_SPEC = RDMA_CHECK_SPEC
    PHASE = rdma_check
