# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations


class ModuleDocFragment:
    # NCCL's socket transport threads, as nccl_env_check checks them and nccl_env_plan writes them
    # (roles/nccl_env: nccl_env_socket_nthreads, nccl_env_nsocks_perthread).
    DOCUMENTATION = r"""
options:
  socket_nthreads:
    description: C(NCCL_SOCKET_NTHREADS) on C(tcp), with O(nsocks_perthread); both empty - NCCL's defaults.
    type: raw
  nsocks_perthread:
    description: C(NCCL_NSOCKS_PERTHREAD) on C(tcp); threads x sockets at most 64.
    type: raw
"""
