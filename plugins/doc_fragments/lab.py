# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations


class ModuleDocFragment:
    # Attributes shared by the lab_* modules: all change only the local host and honour check mode.
    DOCUMENTATION = r"""
attributes:
  check_mode:
    description: Reports what would change without changing it.
    support: full
  diff_mode:
    description: No diff is returned.
    support: none
  platform:
    description: Linux hosts with iproute2, overlayfs, cgroups and systemd-nspawn.
    support: full
    platforms: posix
"""
