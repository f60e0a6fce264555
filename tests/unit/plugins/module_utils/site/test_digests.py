"""unmet_requirements: the pins a venv does not meet yet (python_env's plan), read with pip's rules."""

from __future__ import annotations

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils.site import digests

INSTALLED = {
    "torch": "2.13.0+cpu",
    "PyYAML": "6.0.3",
    "numpy": "2.4.6",
    "rdmaops-trainer": "0.1.0",
    "odd": "x.y",
}


@pytest.mark.parametrize(
    ("wanted", "left"),
    [
        (["torch==2.13.0+cpu", "pyyaml==6.0.3", "numpy==2.4.6"], []),
        (["torch==2.13.0"], []),  # pip: a pin without a local label accepts +cpu
        (["torch==2.13.0+cu130"], ["torch==2.13.0+cu130"]),  # another build of the same version
        (["numpy==2.4.7", "py_yaml==6.0.3"], ["numpy==2.4.7", "py_yaml==6.0.3"]),
        (["rdmaops_trainer"], []),  # PEP 503 names, no specifier: present is enough
        (["deepspeed==0.19.8"], ["deepspeed==0.19.8"]),  # missing (pip uninstall deepspeed on the node)
        (["numpy>=2,<3"], []),
        (["odd==1.0"], ["odd==1.0"]),  # an unparseable installed version never matches
    ],
)
def test_unmet_requirements(wanted: list[str], left: list[str]) -> None:
    assert digests.unmet_requirements(wanted, INSTALLED) == left


def test_unmet_requirements_names_bad_input() -> None:
    with pytest.raises(digests.StampError, match=r"'==2\.0' is not a requirement"):
        digests.unmet_requirements(["==2.0"], INSTALLED)
