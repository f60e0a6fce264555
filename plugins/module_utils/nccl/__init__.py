# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A node's NCCL/gloo environment: the rules for its inputs (``env_rules``), the environment itself
(``env``, rails included), the file format that carries it (``env_file``), NCCL_IB_HCA's syntax (``hca``),
whether the Mesh NCCL net plugin or NCCL's own routing serves the fabric (``mesh_plugin``), the nccl_env and
nccl_mesh_plugin roles' phases (``phase``), and the GPU-to-NIC affinity from ``nvidia-smi topo -m`` (``topo``
reads the matrix, ``affinity`` judges it). Used by those roles, train.yml's preflight and verify.yml.
"""
