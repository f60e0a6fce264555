# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin behind rdmaops.cluster.train_check (documentation: plugins/modules/train_check.py)."""

from __future__ import annotations

from ansible_collections.rdmaops.cluster.plugins.module_utils.train.phase import TRAIN_CHECK_SPEC, check
from ansible_collections.rdmaops.cluster.plugins.plugin_utils.phase import PhaseAction


class ActionModule(PhaseAction):
    NAME = "train_check"
    ARGUMENT_SPEC = TRAIN_CHECK_SPEC
    PHASE = check
