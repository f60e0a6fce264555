# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which CUDA build of torch a node's NVIDIA driver can run: the newest variant whose CUDA toolkit the driver
supports, by NVIDIA's table of minimum drivers."""

from __future__ import annotations

import re
from collections.abc import Sequence

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
