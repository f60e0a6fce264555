# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations


class ModuleDocFragment:
    # The node's RDMA ports as input: the nccl_env filter and the nccl_env role's plan phase (nccl_env_plan)
    # compute the environment from the same list, with one function (module_utils/nccl/env.py).
    DOCUMENTATION = r"""
options:
  ports:
    description: The node's RDMA ports as rdmaops.cluster.rdma_port_info returns them.
    type: list
    elements: dict
    default: []
"""
