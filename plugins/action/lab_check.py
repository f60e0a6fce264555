# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin behind rdmaops.cluster.lab_check (documentation: plugins/modules/lab_check.py)."""

from __future__ import annotations

from ansible_collections.rdmaops.cluster.plugins.module_utils.lab import phase
from ansible_collections.rdmaops.cluster.plugins.plugin_utils.phase import PhaseAction


class ActionModule(PhaseAction):
    NAME = "lab_check"
    ARGUMENT_SPEC = phase.LAB_CHECK_SPEC
    PHASE = phase.check
