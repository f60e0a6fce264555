# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""RDMA devices as the kernel shows them: ports, states, rates and GID tables read from sysfs
(``sysfs``), and the rdma role's validate phase (``phase``). Used by rdma_port_info, the link tests and
verify.yml.
"""
