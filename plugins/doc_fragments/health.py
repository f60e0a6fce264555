# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations


class ModuleDocFragment:
    # The health settings a role's check phase refuses before any node changes (health/gate.py
    # settings_errors): train_check, verify_check and slurm_check take <role>_health_thresholds, ...
    DOCUMENTATION = r"""
options:
  health_thresholds:
    description:
      - The role's C(<role>_health_thresholds), thresholds over the defaults of docs/health.md.
      - An unknown threshold or a value of the wrong type is an error naming the variable and the value.
    type: raw
    default: {}
  health_severity:
    description: The role's C(<role>_health_severity), per check V(fail), V(warn) or V(off).
    type: raw
    default: {}
  health_sources:
    description: The role's C(<role>_health_sources), files read instead of a tool's output (tests, the lab).
    type: raw
    default: {}
"""
