# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The data network of the nodes: address pools and the numbering of direct-connect meshes and switched
fabrics (``addressing``), a node's data ports and MTU (``data_ports``), one node's plan and its netplan
document (``host_plan``), the rules that keep a change from cutting a node off or renumbering it
(``safety``), the cabling graph (``cabling``) and cabling as LLDP reports it (``lldp``), the role's check
phase (``check``), applying netplan with rollback (``netplan_apply``), and the paths every node must reach
(``reachability``), probed with ping and, on a fabric with several rails, arping (``ping``, ``arp``,
``path_probe``). Used by the mesh_network role and its modules.
"""
