# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin behind rdmaops.cluster.python_env_check
(documentation: plugins/modules/python_env_check.py)."""

from __future__ import annotations

from ansible_collections.rdmaops.cluster.plugins.module_utils.python_env import phase
from ansible_collections.rdmaops.cluster.plugins.plugin_utils.phase import PhaseAction


class ActionModule(PhaseAction):
    NAME = "python_env_check"
    ARGUMENT_SPEC = phase.PYTHON_ENV_CHECK_SPEC
    PHASE = phase.check
