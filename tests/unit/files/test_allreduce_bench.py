"""files/allreduce_bench.py: bus-bandwidth math, argument parsing, and a real 2-rank gloo run."""

from __future__ import annotations

import argparse
import importlib.util
import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[3] / "files" / "allreduce_bench.py"
_spec = importlib.util.spec_from_file_location("allreduce_bench", SCRIPT)
assert _spec is not None and _spec.loader is not None
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


@pytest.mark.parametrize(("n", "factor"), [(1, 0.0), (2, 1.0), (3, 4 / 3), (4, 1.5), (8, 1.75)])
def test_bus_factor(n: int, factor: float) -> None:
    assert bench.bus_factor(n) == pytest.approx(factor)


def test_bandwidths() -> None:
    # 1 GB in 1 s over 4 ranks: algbw 8 Gb/s, busbw 8 * 2 * 3 / 4 = 12 Gb/s.
    assert bench.bandwidths(10**9, 1.0, 4) == pytest.approx({"algbw_gbps": 8.0, "busbw_gbps": 12.0})
    with pytest.raises(ValueError, match="time must be positive"):
        bench.bandwidths(1, 0.0, 2)
    with pytest.raises(ValueError, match="world size"):
        bench.bus_factor(0)


def test_parse_size() -> None:
    assert [bench.parse_size(s) for s in ("4K", "1M", "2GiB", "100", "1.5M")] == [
        4096,
        1 << 20,
        2 << 30,
        100,
        1572864,
    ]
    for bad in ("fast", "-1", "0"):
        with pytest.raises(argparse.ArgumentTypeError):
            bench.parse_size(bad)


def test_args_reject_bad_values() -> None:
    assert bench.parse_args(["--sizes", "1K,2K"]).sizes == [1024, 2048]
    with pytest.raises(SystemExit):
        bench.parse_args(["--iters", "0"])


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_two_rank_gloo_all_reduce(tmp_path: Path) -> None:
    """A real all-reduce between two local processes; rank 0 writes the document."""
    out = tmp_path / "ar.json"
    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--nnodes=1", "--nproc-per-node=2",
        "--master-addr=127.0.0.1", f"--master-port={_free_port()}", "--max-restarts=0", str(SCRIPT),
        "--sizes=4K,256K", "--iters=3", "--warmup=1", "--backend=gloo", f"--output={out}", "--timeout=60",
    ]  # fmt: skip
    env = {"PATH": "/usr/bin:/bin", "GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1"}
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    document = json.loads(out.read_text())
    assert document["backend"] == "gloo" and document["world_size"] == 2
    assert [r["bytes"] for r in document["results"]] == [4096, 262144]
    for row in document["results"]:
        assert row["time_ms"] > 0
        # Two ranks: busbw = algbw * 2(2-1)/2 = algbw.
        assert row["busbw_gbps"] == pytest.approx(row["algbw_gbps"], rel=1e-3)
    assert json.loads(run.stdout.strip().splitlines()[-1]) == document
