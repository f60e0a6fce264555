"""gpu_clocks.py: nvidia-smi samples of a row, on lines from 2x H100 80GB HBM3 (call 36, driver 580.159)."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import gpu_clocks
import pytest

# index, clocks.sm, power.draw, utilization.gpu, clocks_event_reasons.active (csv,noheader,nounits)
IDLE = ["0, 345, 76.04, 0, 0x0000000000000001", "1, 345, 71.70, 0, 0x0000000000000001"]
TRAINING = [
    "0, 1320, 697.59, 100, 0x0000000000000004",
    "1, 1515, 691.33, 100, 0x0000000000000004",
    "1, 1515, 694.47, 98, 0x0000000000000004",
    "0, 1470, 692.55, 97, 0x0000000000000004",
    "0, 1980, 402.10, 100, 0x0000000000000000",
]


def test_busy_samples_only_and_the_power_cap_share() -> None:
    s = gpu_clocks.summarize(IDLE + TRAINING)
    assert s is not None
    assert s["busy_samples"] == 5 and s["gpus"] == [0, 1]
    assert s["sm_mhz_median"] == 1515 and s["sm_mhz_min"] == 1320
    assert s["power_w_median"] == 692.5
    assert s["reasons"] == {"sw_power_cap": 0.8}
    assert s["peak_fraction_at_median_clock"] == round(1515 / 1830, 3)


def test_reasons_are_bits_and_unparsable_lines_are_left_out() -> None:
    lines = [
        "0, 1755, 650.00, 100, 0x0000000000000024",  # sw power cap + sw thermal
        "0, [N/A], [N/A], [N/A], [N/A]",
        "1, 1410, 700.1",  # a line cut when the sampler was stopped
        "garbage",
    ]
    s = gpu_clocks.summarize(lines)
    assert s is not None and s["busy_samples"] == 1
    assert s["reasons"] == {"sw_power_cap": 1.0, "sw_thermal": 1.0}


def test_no_busy_gpu_gives_none() -> None:
    assert gpu_clocks.summarize(IDLE) is None
    assert gpu_clocks.summarize([]) is None


def test_sampler_without_nvidia_smi_gives_none(tmp_path: Path) -> None:
    with gpu_clocks.Sampler(smi=str(tmp_path / "no-such-nvidia-smi")) as s:
        pass
    assert s.summary is None


def test_sampler_reads_what_the_tool_printed(tmp_path: Path) -> None:
    # a stand-in for nvidia-smi that prints two samples and then runs until it is stopped, as -lms does
    fake = tmp_path / "nvidia-smi"
    body = "\n".join(f"echo '{x}'" for x in TRAINING[:2])
    fake.write_text(f"#!/bin/sh\n{body}\nexec sleep 60\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    if not os.access(fake, os.X_OK):
        pytest.skip("cannot execute files in tmp_path")
    with gpu_clocks.Sampler(smi=str(fake)) as s:
        deadline = time.monotonic() + 10
        while s._file.read_text().count("\n") < 2 and time.monotonic() < deadline:  # both samples written
            time.sleep(0.05)
    assert s.summary is not None and s.summary["busy_samples"] == 2
    assert not s._file.exists()
