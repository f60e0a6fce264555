"""The mesh_paths module end to end on the host's loopback: one call, the results, bad input named."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from ansible_collections.rdmaops.cluster.plugins.modules import mesh_paths

from ..conftest import RunModule


def _check(expected_dev: str) -> dict[str, Any]:
    return {"dst": "self", "kind": "node", "address": "127.0.0.1", "expected_dev": expected_dev, "size": 100}


# `make deps` installs iproute2 and iputils-ping on the test host.
@pytest.mark.skipif(shutil.which("ip") is None or shutil.which("ping") is None, reason="needs ip and ping")
def test_loopback_paths_in_check_mode(run_module: RunModule) -> None:
    out = run_module(mesh_paths, checks=[_check("lo"), _check("mesh0")], wait_s=1, _ansible_check_mode=True)
    assert out["changed"] is False and out["failed_paths"] == 1
    good, bad = out["results"]
    assert good["ok"] and good["dev"] == "lo" and good["ping_ok"]
    assert not bad["ok"]
    assert bad["error"].startswith("self node address 127.0.0.1: route goes via lo instead of mesh0")


@pytest.mark.parametrize(
    ("args", "named"),
    [
        ({"checks": [], "count": 0}, "count 0 must be 1 or more"),
        ({"checks": [], "interval": 0}, "interval 0.0 must be more than 0"),
        ({"checks": [{"dst": "node2"}]}, "lacks kind, address, expected_dev, size"),
    ],
)
def test_bad_input_is_named(run_module: RunModule, args: dict[str, Any], named: str) -> None:
    out = run_module(mesh_paths, **args)
    assert out["failed"] is True and named in out["msg"]
