# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A node's NCCL/gloo environment: the rules for its inputs (``env_rules``), the environment itself
(``env``), the file format that carries it (``env_file``), whether the Mesh NCCL net plugin or NCCL's own
routing serves the fabric (``mesh_plugin``), and the nccl_env and nccl_mesh_plugin roles' phases (``phase``).
Used by those roles and by verify.yml.
"""
