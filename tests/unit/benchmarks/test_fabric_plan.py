"""benchmarks/fabric_plan.py builds the inputs tasks/validate.yml builds and runs the role's own phases."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[3]


def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fabric_plan", ROOT / "benchmarks" / "fabric_plan.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("case", "ports"), [("rails", 4), ("shared", 4), ("ring", 2), ("mesh", 5)])
def test_every_case_plans_every_node_without_errors(case: str, ports: int) -> None:
    row = bench().run(case, 6, 4)
    assert (row["case"], row["nodes"], row["ports"]) == (case, 6, ports)
    assert row["total_s"] == pytest.approx(row["cluster_s"] + row["nodes_s"])


def test_the_inventory_is_what_validate_yml_hands_the_phases() -> None:
    params = bench().inventory("rails", 3, 8)
    assert params["topology"] == "switched" and params["fabric_scheme"] == "rails"
    assert params["fabric_ports"]["node002"] == [f"ens{10 + k}np0" for k in range(8)]
    facts = json.loads(params["nodes"]["node002"]["addr"])
    assert [link["ifname"] for link in facts] == ["eno1", *params["fabric_ports"]["node002"]]
    ring = bench().inventory("ring", 256, 8)
    # the pair positions of a 256-node ring's cables reach 32,639: a /15 of /30s
    assert ring["link_pool"].endswith("/15") and ring["ports"]["node001"] == {
        "node256": "data0",
        "node002": "data1",
    }
