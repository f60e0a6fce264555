"""The train_preflight module's GPU-to-NIC part: `nvidia-smi topo -m` as run, or rc 127 without it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from ansible_collections.rdmaops.cluster.plugins.modules import train_preflight

from ..conftest import FIXTURE_DIR, RunModule

SMI = FIXTURE_DIR / "nvidia-smi-topo" / "asus-esc8000a-e12-4gpu-4nic.txt"


def preflight(run_module: RunModule, tmp_path: Path) -> dict:
    return run_module(
        train_preflight,
        venv=str(tmp_path / "venv"),
        env_file=str(tmp_path / "nccl.env"),
        output_dir=str(tmp_path / "out"),
        job="tiny",
        port=29500,
    )


def test_nvidia_smi_topo_is_reported_as_printed(
    run_module: RunModule, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "nvidia-smi"
    fake.write_text(f'#!/bin/sh\n[ "$1 $2" = "topo -m" ] || exit 2\ncat {SMI}\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    out = preflight(run_module, tmp_path)
    assert out["gpu_topology"] == {"rc": 0, "stdout": SMI.read_text(), "stderr": ""}


def test_without_nvidia_smi_the_report_says_not_found(
    run_module: RunModule, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The other tools it runs stay reachable; nvidia-smi is not on this PATH.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("ip", "systemctl"):
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    monkeypatch.setenv("PATH", str(bin_dir))
    out = preflight(run_module, tmp_path)
    assert out["gpu_topology"] == {"rc": 127, "stdout": "", "stderr": "nvidia-smi: not found"}
    assert not out.get("failed")
