# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations


class ModuleDocFragment:
    # The settings both phases of the mesh_network role take alike: the cluster phase (mesh_network_plan, once
    # per run) and each node's check (mesh_network_check). The role's defaults own the values.
    DOCUMENTATION = r"""
options:
  topology:
    description: C(mesh) (direct cables in any shape) or C(switched).
    type: str
    required: true
    choices: [mesh, switched]
  mgmt_cidr:
    description: The management network.
    type: raw
    required: true
  mtu:
    description: MTU of the data ports.
    type: raw
    required: true
  nodeaddr_ifname:
    description: Name of the empty bridge that holds the node address.
    type: str
    required: true
"""
