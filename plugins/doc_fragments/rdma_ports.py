# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations


class ModuleDocFragment:
    # The node's RDMA ports as input: the nccl_env filter and the nccl_env role's plan phase (nccl_env_plan)
    # compute the environment from the same list, with one function (module_utils/nccl/env.py). hca and
    # gid_index are described here only: each plugin states their types (the plan phase takes them raw).
    DOCUMENTATION = r"""
options:
  ports:
    description: The node's RDMA ports as rdmaops.cluster.rdma_port_info returns them.
    type: list
    elements: dict
    default: []
  hca:
    description: Explicit device names (or C(device:port)) instead of the discovered ACTIVE ports.
  gid_index:
    description: Explicit GID index instead of the discovered one.
"""
