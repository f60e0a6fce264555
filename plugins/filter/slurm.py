# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Slurm filters (docs: the .yml files beside this one); logic: module_utils/slurm/config.py. The slurm role's
checks and plans are its phases (module_utils/slurm/phase.py), not filters."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.slurm import config as slurm


def slurm_sinfo_states(text: str) -> dict[str, str]:
    return slurm.parse_sinfo_nodes(text)


class FilterModule:
    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"slurm_sinfo_states": slurm_sinfo_states}
