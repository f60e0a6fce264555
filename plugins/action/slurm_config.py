# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin behind rdmaops.cluster.slurm_config (documentation: plugins/modules/slurm_config.py)."""

from __future__ import annotations

from ansible_collections.rdmaops.cluster.plugins.module_utils.slurm import phase
from ansible_collections.rdmaops.cluster.plugins.plugin_utils.phase import PhaseAction


class ActionModule(PhaseAction):
    NAME = "slurm_config"
    ARGUMENT_SPEC = phase.SLURM_CONFIG_SPEC
    PHASE = phase.config
