# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations


class ModuleDocFragment:
    # The health settings a role's check phase refuses before any node changes (health/gate.py
    # settings_errors): train_check, verify_check and slurm_check take <role>_health_thresholds, ...
    # (gate.SETTINGS_SPEC); train_check and verify_check also take <role>_health (MODE, gate.MODE_SPEC).
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

    MODE = r"""
options:
  health:
    description:
      - The role's C(<role>_health), its node health gate (docs/health.md), checked here with
        O(health_thresholds), O(health_severity) and O(health_sources).
      - V(fail) stops on a failing check (train.yml's launch, verify.yml's report), V(warn) only reports,
        V(off) runs no check.
    type: raw
    default: fail
"""
