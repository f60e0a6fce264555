"""The verify_report module end to end: check mode writes nothing, a real run writes the three files."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.rdmaops.cluster.plugins.modules import verify_report

from ..conftest import RunModule

ROWS = [
    {"client": "n1", "server": "n2", "label": "n1:d1 -> n2:d0", "gbps": 0.2, "line_rate_gbps": 10},
    {"client": "n2", "server": "n1", "label": "n2:d0 -> n1:d1", "gbps": 9.5, "line_rate_gbps": 10},
]


def test_check_mode_judges_without_writing(run_module: RunModule, tmp_path: Path) -> None:
    out = run_module(
        verify_report,
        dest=str(tmp_path),
        name="r1",
        hosts=["n1", "n2"],
        measurements=ROWS,
        thresholds={"min_fraction_of_line_rate": 0.8},
        _ansible_check_mode=True,
    )
    assert out["changed"] is False and out["passed"] is False
    assert out["failures"] == ["n1:d1 -> n2:d0 0.20 Gb/s < 0.8 x 10 Gb/s (= 8.00 Gb/s)"]
    assert list(tmp_path.iterdir()) == []


def test_writes_report(run_module: RunModule, tmp_path: Path) -> None:
    out = run_module(verify_report, dest=str(tmp_path), hosts=["n1", "n2"], measurements=ROWS[1:])
    assert out["changed"] is True and out["passed"] is True
    assert Path(out["paths"]["heatmap"]).stat().st_size > 0
    assert (tmp_path / "latest" / "report.json").exists()
    assert Path(out["directory"]).name.startswith("verify-")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"thresholds": {"min_fraction_of_line_rate": 2}}, "must be in"),
        ({"thresholds": {"speed": 1}}, "unknown threshold"),
        ({"name": "../x"}, "plain directory name"),
        ({"measurements": [{"client": "n9", "server": "n1", "label": "x"}]}, "cannot build the report"),
    ],
)
def test_bad_input(
    run_module: RunModule,
    tmp_path: Path,
    args: dict,
    message: str,
) -> None:
    out = run_module(verify_report, dest=str(tmp_path), hosts=["n1", "n2"], **args)
    assert out["failed"] is True and message in out["msg"]
    assert list(tmp_path.iterdir()) == []
