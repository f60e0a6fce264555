# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""RDMA devices as the kernel shows them: ports, states, rates and GID tables read from sysfs (``sysfs``).
Node code (see ``node``): the Slurm health checks run it on the nodes; rdma_port_info, train_preflight, the
link tests and verify.yml read ports with it too.
"""
