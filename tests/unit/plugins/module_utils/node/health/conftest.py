"""Shared helpers for the health tests: the recorded H200 outputs, and copies with one fault injected."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils.node.health.findings import (
    Findings,
    merge_thresholds,
)

from ....conftest import FIXTURE_DIR as FIXTURES

HEALTH = FIXTURES / "health"
SMI_XML = (HEALTH / "nvidia-smi-q-x.h200x4.xml").read_text()


def edit_gpu(text: str, index: int, old: str, new: str) -> str:
    """Replace the first OLD inside the INDEX-th <gpu> block of nvidia-smi's XML (it must be there)."""
    starts = [i for i in range(len(text)) if text.startswith("<gpu id=", i)]
    start = starts[index]
    end = starts[index + 1] if index + 1 < len(starts) else len(text)
    block = text[start:end]
    assert old in block, f"{old!r} not in GPU {index}"
    return text[:start] + block.replace(old, new, 1) + text[end:]


def thresholds(**overrides: Any) -> dict[str, Any]:
    merged, errors = merge_thresholds(overrides)
    assert not errors, errors
    return merged


def collect(fn: Any, *args: Any, severity: dict[str, str] | None = None) -> list[dict[str, Any]]:
    out = Findings("node1", severity)
    fn(*args, out)
    return out.items


def brief(finding: dict[str, Any], *keys: str) -> tuple[Any, ...]:
    """The finding's fields KEYS (default: check, value, threshold, severity) as a tuple."""
    return tuple(finding[k] for k in keys or ("check", "value", "threshold", "severity"))


@pytest.fixture
def sysfs_copy(tmp_path: Path):
    """copy(scenario) -> a writable copy of a tests/unit/fixtures/sysfs tree."""

    def copy(scenario: str) -> Path:
        dst = tmp_path / scenario
        shutil.copytree(FIXTURES / "sysfs" / scenario, dst)
        return dst

    return copy
