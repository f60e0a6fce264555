# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations


class ModuleDocFragment:
    # The Mesh plugin's settings, as the nccl_mesh_plugin filter takes them and the role's check phase
    # (nccl_mesh_plugin_check) checks them: one function decides for both (module_utils/nccl/mesh_plugin.py).
    # Descriptions only: each plugin states its own types (the check phase takes its settings raw).
    DOCUMENTATION = r"""
options:
  force:
    description: Use the plugin even when NCCL has the built-in routing.
  transport:
    description: C(rdma) (the plugin's verbs backend) or C(tcp).
  ifname:
    description: C(NCCL_MESH_IFNAME), the plugin's interface filter; empty leaves it unset.
  gid_index:
    description: C(NCCL_MESH_GID_INDEX); none for automatic.
  nsocks:
    description: C(NCCL_MESH_NSOCKS), sockets per TCP connection (1..16).
  debug:
    description: C(NCCL_MESH_DEBUG), 0..2.
  cabling:
    description: The cabling rdmaops.cluster.mesh_network planned (its fact C(mesh_network_cabling)) - whether
      NCCL's built-in routing can carry it, and C(NCCL_ALGO=Ring) where nodes lack a cable between them; empty
      for a full mesh.
"""
