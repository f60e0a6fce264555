"""torch_cuda_variant: the CUDA build of torch a node's NVIDIA driver can run."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.rdmaops.cluster.plugins.filter.torch_cuda_variant import FilterModule
from ansible_collections.rdmaops.cluster.plugins.module_utils.python_env.torch_build import (
    driver_version,
    variant_cuda,
)

F = FilterModule().filters()["torch_cuda_variant"]
VARIANTS = ["cu126", "cu128", "cu130"]
# /proc/driver/nvidia/version as the 570 driver writes it
PROC_570 = (
    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.124.06  Wed Feb 26 02:31:10 UTC 2025\n"
    "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n"
)
# the open kernel module's wording
PROC_OPEN = (
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.82.07  Release Build  (dvs-builder@U16)\n"
)


@pytest.mark.parametrize(
    ("driver", "variant"),
    [
        ("580.65.06", "cu130"),  # exactly 13.0's minimum
        ("580.65.05", "cu128"),
        ("570.26", "cu128"),
        ("570.25.99", "cu126"),
        ("565.57.01", "cu126"),
        ("560.28.03", "cu126"),
        ("590.44.01\n", "cu130"),  # /sys/module/nvidia/version
        (PROC_570, "cu128"),
        (PROC_OPEN, "cu130"),
    ],
)
def test_newest_supported_variant(driver: str, variant: str) -> None:
    got = F(driver, VARIANTS)
    assert got["variant"] == variant
    assert got["index_url"] == f"https://download.pytorch.org/whl/{variant}"


def test_result_fields_and_index_base() -> None:
    got = F(PROC_570, ["cu128", "cu126"], index_base="http://mirror.local/whl/")
    assert got == {
        "variant": "cu128",
        "cuda": "12.8",
        "driver": "570.124.06",
        "min_driver": "570.26",
        "index_url": "http://mirror.local/whl/cu128",
    }


def test_parsers() -> None:
    assert driver_version("535.230.02") == (535, 230, 2)
    # the GCC version on the second line is not mistaken for the driver
    assert driver_version(PROC_570) == (570, 124, 6)
    assert variant_cuda("cu118") == "11.8" and variant_cuda("cu130") == "13.0"


@pytest.mark.parametrize(
    ("driver", "variants", "message"),
    [
        (
            "535.54.03",
            VARIANTS,
            r"driver 535.54.03 is older than every torch CUDA build .*cu126 needs >= 560.28.03",
        ),
        ("not a driver", VARIANTS, r"no NVIDIA driver version .* in 'not a driver'"),
        ("570.26", ["cu999"], r"variant 'cu999': CUDA 99.9 is not in the driver table"),
        ("570.26", ["cuda12"], r"variant 'cuda12' is not of the form cuXYZ"),
        ("570.26", [], r"variants must be a non-empty list"),
    ],
)
def test_errors_name_the_value(driver: str, variants: list[str], message: str) -> None:
    with pytest.raises(AnsibleFilterError, match=message):
        F(driver, variants)
