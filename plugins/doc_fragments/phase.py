# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations


class ModuleDocFragment:
    # What every role-phase action (plugin_utils/phase.py PhaseAction) is: a pure check on the controller.
    DOCUMENTATION = r"""
attributes:
  action:
    description: Runs on the controller (an action plugin).
    support: full
  check_mode:
    description: The same answer in check mode; it changes nothing.
    support: full
  diff_mode:
    description: Nothing to compare.
    support: none
  platform:
    description: Any controller.
    support: full
    platforms: posix
"""
