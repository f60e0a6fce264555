"""benchmarks/gpu holds scripts, not a package: its tests import them by module name from there."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[3] / "benchmarks" / "gpu"
sys.path.insert(0, str(BENCH))
