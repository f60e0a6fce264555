# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The data network of the nodes: address plans for direct-connect meshes and switched fabrics
(``addressing``), the rules that keep a change from cutting a node off or renumbering it (``safety``),
cabling as LLDP reports it (``lldp``), applying netplan with rollback (``netplan_apply``), and probing
every path with ping (``ping``, ``path_probe``). Used by the mesh_network role and its modules.
"""
