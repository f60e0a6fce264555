# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The training venv of every node: which CUDA build of torch a node's NVIDIA driver can run
(``torch_build``, also the public filter torch_cuda_variant), and the python_env role's phases, the check of
its settings and the plan from what the node holds (``phase``).
"""
