# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations


class ModuleDocFragment:
    # A node's fabric ports in rail order, as nccl_env_check checks them and the nccl_env filter and
    # nccl_env_plan use them (module_utils/nccl/env.py). Described here only: each plugin states the type.
    DOCUMENTATION = r"""
options:
  rails:
    description:
      - The node's fabric interfaces in rail order (item i is rail i; the role passes C(nccl_env_rails)).
      - With two or more on C(rdma), C(NCCL_IB_HCA) lists the RDMA port whose netdev is each rail's interface
        (it must be ACTIVE), in rail order, unless the HCAs are given, and C(NCCL_CROSS_NIC=0) keeps a channel
        on its rail; on C(tcp), C(NCCL_SOCKET_IFNAME) lists every rail's interface. One rail or none changes
        nothing.
"""
