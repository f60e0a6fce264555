# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin behind rdmaops.cluster.switch_qos_check (documented in its doc-only module)."""

from __future__ import annotations

from ansible_collections.rdmaops.cluster.plugins.module_utils.qos.phase import (
    SWITCH_QOS_CHECK_SPEC,
    switch_qos_check,
)
from ansible_collections.rdmaops.cluster.plugins.plugin_utils.phase import PhaseAction


class ActionModule(PhaseAction):
    NAME = "switch_qos_check"
    ARGUMENT_SPEC = SWITCH_QOS_CHECK_SPEC
    PHASE = switch_qos_check
