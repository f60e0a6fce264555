# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which CUDA build of torch a node's NVIDIA driver can run
(logic: module_utils/python_env/torch_build.py)."""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.rdmaops.cluster.plugins.module_utils.python_env.torch_build import (
    TorchCudaError,
    pick_variant,
)

DOCUMENTATION = r"""
name: torch_cuda_variant
short_description: Pick the CUDA build of torch (cuXYZ wheel variant and index) for an NVIDIA driver version
version_added: "0.1.0"
author: Rdmaops Developers (@rdmaops)
description:
  - Returns the newest of O(variants) whose CUDA toolkit the driver supports, with its PyTorch wheel index.
  - The minimum Linux driver of each CUDA release is NVIDIA's (CUDA Toolkit release notes, table
    "CUDA Toolkit and Corresponding Driver Versions", GA releases), for example 12.6 needs 560.28.03,
    12.8 needs 570.26, 13.0 needs 580.65.06.
  - The input is the driver version (C(570.124.06)) or the text of C(/proc/driver/nvidia/version) or
    C(/sys/module/nvidia/version).
  - Fails naming the value for a driver version it cannot read, a variant it does not know, or a driver older
    than every variant.
positional: _input, variants
options:
  _input:
    description: The driver version, or the file text that contains it.
    type: str
    required: true
  variants:
    description: The CUDA variants the torch release is published for, e.g. C([cu126, cu128, cu130]).
    type: list
    elements: str
    required: true
  index_base:
    description: Base URL of the PyTorch wheel indexes; the variant is appended.
    type: str
    default: https://download.pytorch.org/whl
"""

EXAMPLES = r"""
# {"variant": "cu128", "cuda": "12.8", "driver": "570.124.06", "min_driver": "570.26",
#  "index_url": "https://download.pytorch.org/whl/cu128"}
torch_build: "{{ '570.124.06' | rdmaops.cluster.torch_cuda_variant(['cu126', 'cu128', 'cu130']) }}"
"""

RETURN = r"""
_value:
  description: C(variant), C(cuda), C(driver), C(min_driver) and C(index_url).
  type: dict
"""


def torch_cuda_variant(text: Any, variants: Any, index_base: Any = "https://download.pytorch.org/whl") -> Any:
    try:
        return pick_variant(text, variants, index_base)
    except TorchCudaError as exc:
        raise AnsibleFilterError(f"torch_cuda_variant: {exc}") from exc


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"torch_cuda_variant": torch_cuda_variant}
