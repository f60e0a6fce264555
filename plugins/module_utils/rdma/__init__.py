# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rdma role's validate phase (``phase``). The sysfs port reader that rdma_port_info, the link tests and
verify.yml use is node code: ``node.rdma.sysfs``.
"""
