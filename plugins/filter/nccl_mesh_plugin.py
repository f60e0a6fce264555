# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""nccl_mesh_plugin: whether a node needs the Mesh NCCL net plugin, and the NCCL variables that follow.

The rules live in module_utils/nccl/mesh_plugin.py, which the role's validate phase
(rdmaops.cluster.nccl_mesh_plugin_check) calls too.
"""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.rdmaops.cluster.plugins.module_utils.nccl import mesh_plugin as rules

DOCUMENTATION = r"""
name: nccl_mesh_plugin
short_description: Whether a node needs the Mesh NCCL net plugin, and the NCCL variables that follow
version_added: "0.1.0"
author: Rdmaops Developers (@rdmaops)
description:
  - "NCCL 2.30.7 or newer (unless forced) where the cabling allows it (docs/nccl_plugin.md): the built-in
    subnet-aware routing, C(NCCL_IB_SUBNET_AWARE_ROUTING=1) with C(NCCL_IB_SUBNET_PREFIX_LEN) at the cables'
    prefix."
  - "Older or unknown NCCL: C(NCCL_NET_PLUGIN=mesh), C(NCCL_MESH_TRANSPORT) (verbs for rdma, tcp for tcp),
    and the plugin's optional settings."
positional: _input
options:
  _input:
    description: The NCCL version of the venv's torch (C(2.28.9), a tuple, or NCCL_VERSION_CODE); empty when
      unknown.
    type: raw
    required: true
  force: {type: bool, required: true}
  transport: {type: str, required: true}
  ifname: {type: str, default: ""}
  gid_index: {type: int}
  nsocks: {type: int, default: 4}
  debug: {type: int, default: 0}
  cabling: {type: dict}
extends_documentation_fragment:
  - rdmaops.cluster.nccl_mesh_plugin
"""

EXAMPLES = r"""
- name: Decide
  ansible.builtin.set_fact:
    decision: "{{ '2.28.9' | rdmaops.cluster.nccl_mesh_plugin(force=false, transport='rdma') }}"
"""

RETURN = r"""
_value:
  description: C(use_plugin) (bool), C(reason), C(nccl) (the version read, or none), C(env) (variables to
    add).
  type: dict
"""


def nccl_mesh_plugin(nccl_version: Any, *, force: bool, transport: str, **settings: Any) -> dict[str, Any]:
    try:
        return rules.decide(nccl_version, force=bool(force), transport=str(transport), **settings)
    except rules.NcclMeshPluginError as exc:
        raise AnsibleFilterError(f"nccl_mesh_plugin: {exc}") from exc


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"nccl_mesh_plugin": nccl_mesh_plugin}
