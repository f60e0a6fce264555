"""The GPUs' SM clock, power and clock-event reasons while a benchmark row runs (run_all.py --gpu-clocks).

MFU is measured against the datasheet peak (989 TFLOP/s dense bf16 on H100 SXM / H200: 132 SMs x 4096
FLOP per clock at 1,830 MHz). A GPU held at its power limit runs its SMs slower than that, so a row's
clocks say how much of the peak was on offer. nvidia-smi samples every 500 ms; samples of a busy GPU
(utilization >= 50%) are summarised.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import tempfile
from pathlib import Path
from types import TracebackType
from typing import Any

QUERY = "index,clocks.sm,power.draw,utilization.gpu,clocks_event_reasons.active"
# nvmlClocksEventReasons bits that slow the SMs down (idle and application-clock settings left out)
REASONS = {
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x20: "sw_thermal",
    0x40: "hw_thermal",
    0x80: "hw_power_brake",
}
PEAK_MHZ = 1830  # the clock of the datasheet's 989 TFLOP/s


def summarize(lines: list[str], busy_util: int = 50) -> dict[str, Any] | None:
    """Summary of ``nvidia-smi --query-gpu=QUERY --format=csv,noheader,nounits`` lines; None if no GPU was
    busy. Lines that do not parse (a GPU that reports ``[N/A]``, a cut last line) are left out."""
    mhz: list[float] = []
    watts: list[float] = []
    counts = dict.fromkeys(REASONS.values(), 0)
    gpus: set[int] = set()
    for line in lines:
        f = [x.strip() for x in line.split(",")]
        if len(f) != 5:
            continue
        try:
            idx, clk, pw, util, reasons = int(f[0]), float(f[1]), float(f[2]), int(f[3]), int(f[4], 16)
        except ValueError:
            continue
        if util < busy_util:
            continue
        gpus.add(idx)
        mhz.append(clk)
        watts.append(pw)
        for bit, name in REASONS.items():
            counts[name] += bool(reasons & bit)
    if not mhz:
        return None
    n = len(mhz)
    return {
        "busy_samples": n,
        "gpus": sorted(gpus),
        "sm_mhz_median": statistics.median(mhz),
        "sm_mhz_min": min(mhz),
        "power_w_median": round(statistics.median(watts), 1),
        # the share of busy samples with each slowdown reason active
        "reasons": {k: round(v / n, 3) for k, v in counts.items() if v},
        "peak_fraction_at_median_clock": round(statistics.median(mhz) / PEAK_MHZ, 3),
    }


class Sampler:
    """``with Sampler() as s: ...`` samples nvidia-smi in the background; ``s.summary`` afterwards (None
    when nvidia-smi is missing or no GPU was busy)."""

    def __init__(self, interval_ms: int = 500, smi: str = "nvidia-smi") -> None:
        self.cmd = [smi, f"--query-gpu={QUERY}", "--format=csv,noheader,nounits", "-lms", str(interval_ms)]
        self.summary: dict[str, Any] | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._file = Path()

    def __enter__(self) -> Sampler:
        fd, name = tempfile.mkstemp(prefix="gpu-clocks-", suffix=".csv")
        os.close(fd)
        self._file = Path(name)
        try:
            with open(self._file, "wb") as fh:
                self._proc = subprocess.Popen(self.cmd, stdout=fh, stderr=subprocess.DEVNULL)
        except OSError:
            self._proc = None
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            self.summary = summarize(self._file.read_text(errors="replace").splitlines())
        self._file.unlink(missing_ok=True)
