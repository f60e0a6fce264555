"""The lab cases' process helpers (tests/labkit.py): a play run in the background while a case waits."""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

_SPEC = importlib.util.spec_from_file_location("labkit", Path(__file__).resolve().parents[2] / "labkit.py")
assert _SPEC is not None and _SPEC.loader is not None
labkit = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(labkit)

# a play's output before the moment a case waits for: more than a pipe holds (64 KiB), then a mark
WRITER = (
    "import sys; sys.stdout.write('x' * 200000 + '\\n'); sys.stdout.flush(); open(sys.argv[1], 'w').close()"
)


def test_a_background_process_that_nobody_reads_is_not_held_by_its_output(tmp_path: Path) -> None:
    mark = tmp_path / "reached"
    proc = labkit.spawn([sys.executable, "-c", WRITER, str(mark)])
    deadline = time.monotonic() + 30
    while not mark.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert mark.exists(), "the process blocked on its own output"
    assert labkit.output(proc).startswith("x" * 1000)
    out = labkit.finish(proc, 30)
    assert proc.returncode == 0 and len(out) == 200001


def test_one_that_outlives_its_bound_is_killed_and_says_so() -> None:
    proc = labkit.spawn([sys.executable, "-c", "import time; print('started', flush=True); time.sleep(60)"])
    out = labkit.finish(proc, 1)
    assert out.startswith("started") and out.endswith("(killed after 1 s)\n") and proc.returncode != 0
