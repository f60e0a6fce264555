"""The python_env role's phases: the settings (check), then the node and what to install (plan)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils.python_env import phase

SETTINGS: dict[str, Any] = {
    "path": "/opt/rdmaops/venv",
    "profile": "auto",
    "python_min": "3.10",
    "torch_version": "2.13.0",
    "deepspeed_version": "0.19.8",
    "setuptools_version": "84.2.1",
    "torch_cuda_variants": ["cu126", "cu128", "cu130"],
    "wheelhouse": "",
    "packages": ["numpy==2.4.6", "PyYAML==6.0.3"],
}


def test_check_passes_the_defaults() -> None:
    assert phase.check(SETTINGS) == {"errors": [], "plan": {}}


@pytest.mark.parametrize(
    ("key", "value", "wanted"),
    [
        (
            "path",
            "/opt/venv/",
            "python_env_path='/opt/venv/' is not an absolute path without a trailing slash",
        ),
        ("path", "venv", "python_env_path='venv'"),
        ("profile", "gpu", "python_env_profile='gpu' is not auto, cpu or cuda"),
        ("python_min", "3", "python_env_python_min='3' is not a version like 3.10"),
        ("torch_version", "2.13", "python_env_torch_version='2.13' is not a version like 2.13.0"),
        ("deepspeed_version", "latest", "python_env_deepspeed_version='latest'"),
        ("setuptools_version", "x", "python_env_setuptools_version='x'"),
        ("torch_cuda_variants", [], "python_env_torch_cuda_variants='[]' is not a non-empty list"),
        ("wheelhouse", "wheels", "python_env_wheelhouse='wheels' is not an absolute path or empty"),
        ("packages", ["numpy>=2", "torch"], "python_env: 'numpy>=2' is not an exact pin (name==version)"),
    ],
)
def test_check_names_each_bad_value(key: str, value: Any, wanted: str) -> None:
    errors = phase.check({**SETTINGS, key: value})["errors"]
    assert any(wanted in e for e in errors), errors


def test_check_reports_every_bad_value_and_unpinned_package() -> None:
    errors = phase.check({**SETTINGS, "profile": "gpu", "packages": ["a", "b==1", "c"]})["errors"]
    assert len(errors) == 3 and "'a'" in errors[1] and "'c'" in errors[2]


DRIVER_570 = "570.124.06\n"
DPKG = ["python3-venv installed", "build-essential installed", "python3-dev config-files"]


def _plan(**over: Any) -> dict[str, Any]:
    args: dict[str, Any] = {
        "host": "node1",
        "python": "/usr/bin/python3",
        "python_min": "3.10",
        "python_rc": 0,
        "python_version": "3.11.2",
        "python_error": "",
        "wheelhouse": "",
        "wheelhouse_isdir": False,
        "profile": "auto",
        "driver": None,
        "torch_cuda_variants": ["cu126", "cu128", "cu130"],
        "torch_index_base": "https://download.pytorch.org/whl",
        "torch_version": "2.13.0",
        "deepspeed_version": "0.19.8",
        "setuptools_version": "84.2.1",
        "packages": ["numpy==2.4.6", "PyYAML==6.0.3"],
        "os_packages": ["python3-venv"],
        "jit_os_packages": ["build-essential", "python3-dev"],
        "dpkg_lines": DPKG,
        "installed_rc": 1,
        "installed": "",
        "trainer_tree": [],
    }
    args.update(over)
    return phase.plan(args)


def test_plan_cpu_where_no_driver_is_loaded_on_a_fresh_node() -> None:
    out = _plan()
    plan = out["plan"]
    assert out["errors"] == [] and plan["profile"] == "cpu" and plan["torch_build"] == {}
    assert plan["torch_pin"] == "torch==2.13.0+cpu"
    assert plan["torch_index_url"] == "https://download.pytorch.org/whl/cpu"
    assert plan["wanted_os_packages"] == ["python3-venv"] and plan["missing_os_packages"] == []
    # nothing is installed before the venv exists: every pin is unmet
    assert plan["unmet"] == plan["pins"] and plan["installed"] == {}
    assert plan["pins"]["pinned"] == ["torch==2.13.0+cpu", "numpy==2.4.6", "PyYAML==6.0.3"]


def test_plan_cuda_picks_the_newest_build_the_driver_runs_and_the_jit_packages() -> None:
    plan = _plan(driver=DRIVER_570)["plan"]
    assert plan["profile"] == "cuda" and plan["torch_build"]["variant"] == "cu128"
    assert plan["torch_pin"] == "torch==2.13.0+cu128"
    assert plan["torch_index_url"] == "https://download.pytorch.org/whl/cu128"
    assert plan["missing_os_packages"] == ["python3-dev"]
    assert _plan(driver=DRIVER_570, profile="cpu")["plan"]["torch_pin"] == "torch==2.13.0+cpu"


def test_plan_of_a_converged_venv_installs_nothing() -> None:
    installed = {"setuptools": "84.2.1", "torch": "2.13.0+cpu", "numpy": "2.4.6", "pyyaml": "6.0.3"}
    installed["deepspeed"] = "0.19.8"
    plan = _plan(installed_rc=0, installed=json.dumps(installed))["plan"]
    assert plan["unmet"] == {"setuptools": [], "pinned": [], "deepspeed": []}
    assert plan["installed"]["torch"] == "2.13.0+cpu"
    # a cuda node with the cpu build of torch installs torch again
    assert _plan(installed_rc=0, installed=json.dumps(installed), driver=DRIVER_570)["plan"]["unmet"][
        "pinned"
    ] == ["torch==2.13.0+cu128"]


@pytest.mark.parametrize(
    ("over", "wanted"),
    [
        (
            {"python_version": "3.9.18"},
            "python_env_python /usr/bin/python3 on node1: Python 3.9.18 is older than "
            "python_env_python_min 3.10",
        ),
        (
            {"python_rc": 2, "python_error": "[Errno 2] No such file or directory"},
            "python_env_python /usr/bin/python3 on node1: cannot be run ([Errno 2] No such "
            "file or directory)",
        ),
        (
            {"wheelhouse": "/srv/wheelhouse"},
            "python_env_wheelhouse /srv/wheelhouse is not a directory on node1",
        ),
        (
            {"profile": "cuda"},
            "python_env_profile is cuda but node1 has no NVIDIA driver loaded "
            "(/sys/module/nvidia/version is missing)",
        ),
        (
            {"driver": "535.54.03", "torch_cuda_variants": ["cu128", "cu130"]},
            "python_env_torch_cuda_variants on node1: NVIDIA driver 535.54.03 is older than "
            "every torch CUDA build offered (cu128, cu130): cu128 needs >= 570.26",
        ),
        (
            {"installed_rc": 0, "installed": "[1, 2]"},
            "the venv's distributions on node1 are not a JSON mapping",
        ),
    ],
)  # fmt: skip
def test_plan_names_what_the_node_lacks(over: dict[str, Any], wanted: str) -> None:
    errors = _plan(**over)["errors"]
    assert any(wanted in e for e in errors), errors


def test_plan_digests_the_trainer_source(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("print('step')\n")
    tree = [{"path": "train.py", "src": str(tmp_path / "train.py"), "state": "file"}]
    first = _plan(trainer_tree=tree)["plan"]["trainer_digest"]
    assert len(first) == 64
    (tmp_path / "train.py").write_text("print('steps')\n")
    assert _plan(trainer_tree=tree)["plan"]["trainer_digest"] != first
    assert _plan()["plan"]["trainer_digest"] == ""
    (err,) = _plan(trainer_tree=[{"path": "gone.py", "src": str(tmp_path / "gone.py")}])["errors"]
    assert err.startswith("python_env on node1: tree_digest: cannot read")
