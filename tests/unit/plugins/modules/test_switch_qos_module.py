"""switch_qos: the module refuses bad inputs with the role's own check, in the same words."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils.qos.phase import switch_qos_check
from ansible_collections.rdmaops.cluster.plugins.modules import switch_qos

from ..conftest import RunModule

BAD: list[dict[str, Any]] = [
    {"ecn": {"min_kbytes": "150k"}},
    {"ecn": {"weight": 16}},
    {"names": {"class_map": 5}},
    {"interfaces": ["Ethernet1/1", "Ethernet01/01"]},
    {"interfaces": ["Ethernet1/\u0661"]},
    {"interfaces": ["Ethernet1/1\n"]},
    {"roce_qos": {"qos_group": 0}},
    {"confirm_timeout": 10, "hold_before_confirm": 60},
    {"confirm_timeout": 30, "timeout": 30},
]


@pytest.mark.parametrize("change", BAD)
def test_module_and_role_refuse_the_same_values_with_the_same_words(
    change: dict[str, Any], run_module: RunModule, tmp_path: Path
) -> None:
    args: dict[str, Any] = {
        "name": "sw1",
        "host": "192.0.2.1",
        "username": "admin",
        "password": "x",
        "platform": "nx-os",
        "interfaces": ["Ethernet1/1"],
        "backup_dir": str(tmp_path),
    } | change
    out = run_module(switch_qos, **args)
    role = switch_qos_check(
        {
            "roce_qos": args.get("roce_qos", {}),
            "platform": "nx-os",
            "interfaces": args["interfaces"],
            "names": args.get("names", {}),
            "ecn": args.get("ecn", {}),
            "password": "x",
            "ssh_key": "",
            "confirm_timeout": args.get("confirm_timeout", 120),
            "hold_before_confirm": args.get("hold_before_confirm", 0),
            "timeout": args.get("timeout", 30),
        }
    )
    assert out["failed"] and role["errors"], (out, role)
    assert out["msg"] == "sw1: " + "; ".join(role["errors"])
    assert list(tmp_path.iterdir()) == []  # refused before any session: no backup either
