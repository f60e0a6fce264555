# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which CUDA build of torch a node's NVIDIA driver can run."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ansible.errors import AnsibleFilterError

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

# CUDA release -> minimum Linux x86_64 driver (GA toolkit), from NVIDIA's CUDA release notes.
MIN_DRIVER: dict[str, str] = {
    "11.8": "520.61.05",
    "12.0": "525.60.13",
    "12.1": "530.30.02",
    "12.2": "535.54.03",
    "12.3": "545.23.06",
    "12.4": "550.54.14",
    "12.5": "555.42.02",
    "12.6": "560.28.03",
    "12.8": "570.26",
    "12.9": "575.51.03",
    "13.0": "580.65.06",
}

_DRIVER = re.compile(r"(?<![\d.])(\d{3,4}(?:\.\d{1,3}){1,2})(?![\d.])")
_VARIANT = re.compile(r"^cu(\d{2,3})$")


class TorchCudaError(ValueError):
    pass


def driver_string(text: str) -> str:
    """The driver version as written in a bare version string or in the nvidia module's version file."""
    if not isinstance(text, str):
        raise TorchCudaError(f"driver version must be a string, got {text!r}")
    marker = re.search(r"Kernel Module(?: for [^ ]+)?\s+", text)
    found = _DRIVER.search(text, marker.end() if marker else 0)
    if not found:
        raise TorchCudaError(f"no NVIDIA driver version (like 570.124.06) in {text.strip()[:120]!r}")
    return found.group(1)


def driver_version(text: str) -> tuple[int, ...]:
    return _as_tuple(driver_string(text))


def variant_cuda(variant: str) -> str:
    """cu128 -> 12.8, cu130 -> 13.0, cu118 -> 11.8."""
    m = _VARIANT.match(str(variant))
    if not m:
        raise TorchCudaError(f"variant {variant!r} is not of the form cuXYZ (e.g. cu128)")
    digits = m.group(1)
    cuda = f"{digits[:-1]}.{digits[-1]}"
    if cuda not in MIN_DRIVER:
        raise TorchCudaError(
            f"variant {variant!r}: CUDA {cuda} is not in the driver table ({', '.join(MIN_DRIVER)})"
        )
    return cuda


def _as_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in version.split("."))


def pick_variant(
    text: str, variants: Sequence[str], index_base: str = "https://download.pytorch.org/whl"
) -> dict[str, str]:
    if not variants or isinstance(variants, str):
        raise TorchCudaError(f"variants must be a non-empty list like [cu126, cu128], got {variants!r}")
    written = driver_string(text)
    driver = _as_tuple(written)
    known = sorted(((_as_tuple(variant_cuda(v)), str(v)) for v in variants), reverse=True)
    for cuda_tuple, variant in known:
        cuda = ".".join(map(str, cuda_tuple))
        if driver >= _as_tuple(MIN_DRIVER[cuda]):
            return {
                "variant": variant,
                "cuda": cuda,
                "driver": written,
                "min_driver": MIN_DRIVER[cuda],
                "index_url": f"{index_base.rstrip('/')}/{variant}",
            }
    oldest = known[-1]
    need = MIN_DRIVER[".".join(map(str, oldest[0]))]
    raise TorchCudaError(
        f"NVIDIA driver {written} is older than every torch CUDA build offered "
        f"({', '.join(str(v) for v in variants)}): {oldest[1]} needs >= {need}"
    )


def torch_cuda_variant(text: Any, variants: Any, index_base: Any = "https://download.pytorch.org/whl") -> Any:
    try:
        return pick_variant(text, variants, index_base)
    except TorchCudaError as exc:
        raise AnsibleFilterError(f"torch_cuda_variant: {exc}") from exc


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"torch_cuda_variant": torch_cuda_variant}
