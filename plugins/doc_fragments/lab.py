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

    # The options of modules that act on an existing instance found under its directories (lab_teardown,
    # lab_crash); plugins/module_utils/lab/host.py INSTANCE_SPEC is their argument spec.
    INSTANCE = r"""
options:
  name:
    description: Instance name.
    type: str
    required: true
  cache_dir:
    description: Where instances keep their persistent files.
    type: path
    default: /var/lib/rdmaops-lab
  run_dir:
    description: Where instances keep PIDs and logs.
    type: path
    default: /run/rdmaops-lab
"""
