# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations


class ModuleDocFragment:
    # Attributes of the role-phase modules (plugins/plugin_utils/phase.py): action plugins on the controller
    # that check and plan, and change nothing.
    DOCUMENTATION = r"""
attributes:
  action:
    description: Runs on the controller.
    support: full
  check_mode:
    description: Checks and plans the same; changes nothing.
    support: full
  diff_mode:
    description: Nothing to compare.
    support: none
  platform:
    description: The controller.
    support: full
    platforms: posix
"""
