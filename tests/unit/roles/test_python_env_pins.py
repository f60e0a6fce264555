"""python_env installs what the controller, the tests and the lab's wheelhouse pin: one set of versions."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]


def requirement_pins() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        m = re.match(r"^([A-Za-z0-9_.-]+)==(\S+)$", line.strip())
        if m:
            pins[m.group(1).lower()] = m.group(2)
    return pins


def test_role_pins_match_requirements() -> None:
    defaults = yaml.safe_load((ROOT / "roles/python_env/defaults/main.yml").read_text())
    req = requirement_pins()
    role = dict(p.lower().split("==") for p in defaults["python_env_packages"])
    assert role == {name: req[name] for name in role}, "python_env_packages differ from requirements.txt"
    assert defaults["python_env_torch_version"] == req["torch"]
    assert defaults["python_env_deepspeed_version"] == req["deepspeed"]
    assert defaults["python_env_setuptools_version"] == req["setuptools"]


def test_lab_wheelhouse_carries_the_cpu_profile() -> None:
    lab = yaml.safe_load((ROOT / "roles/lab/defaults/main.yml").read_text())["lab_wheelhouse_packages"]
    role = yaml.safe_load((ROOT / "roles/python_env/defaults/main.yml").read_text())
    wanted = {p.split("==")[0].lower() for p in role["python_env_packages"]}
    wanted |= {"torch", "deepspeed", "setuptools"}
    assert wanted <= {p.lower() for p in lab}
    # deepspeed has no wheel on PyPI: the wheelhouse must fetch its sdist
    assert "--no-binary=deepspeed" in lab
