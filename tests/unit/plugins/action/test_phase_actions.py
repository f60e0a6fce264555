"""Each role-phase action plugin: arguments through PhaseAction, one message for all errors, or the plan."""

from __future__ import annotations

import importlib
from typing import Any
from unittest.mock import MagicMock

import pytest
from ansible.errors import AnsibleActionFail
from ansible.playbook.play_context import PlayContext

ACTIONS = ["switch_qos_check", "nccl_env_check", "nccl_env_plan", "nccl_mesh_plugin_check", "rdma_check"]


def run(name: str, **args: Any) -> dict[str, Any]:
    module = importlib.import_module(f"ansible_collections.rdmaops.cluster.plugins.action.{name}")
    task = MagicMock()
    task.args = args
    task.async_val = 0
    task.check_mode = False
    plugin = module.ActionModule(task, MagicMock(), PlayContext(), MagicMock(), MagicMock(), MagicMock())
    return plugin.run(task_vars={})


@pytest.mark.parametrize("name", ACTIONS)
def test_each_action_documents_the_spec_it_checks(name: str) -> None:
    action = importlib.import_module(
        f"ansible_collections.rdmaops.cluster.plugins.action.{name}"
    ).ActionModule
    doc = importlib.import_module(f"ansible_collections.rdmaops.cluster.plugins.modules.{name}")
    assert name == action.NAME and f"module: {name}\n" in doc.DOCUMENTATION
    for option in action.ARGUMENT_SPEC:
        assert f"\n  {option}:\n" in doc.DOCUMENTATION, f"{name}: option {option} is not documented"


def test_switch_qos_check_fails_once_with_every_error() -> None:
    out = run(
        "switch_qos_check",
        roce_qos={"dscp": 64},
        platform="nx-os",
        interfaces=["Ethernet1/1", "eth1/1"],
        names={},
        ecn={},
        confirm_timeout=0,
    )
    assert out["failed"] is True and out["plan"] == {}
    assert out["msg"] == (
        "roce_qos.dscp must be an integer 0..63, got 64; interface 'eth1/1' is listed twice (also as "
        "'Ethernet1/1'); no credentials: set switch_qos_password (from Ansible Vault) or switch_qos_ssh_key; "
        "switch_qos_confirm_timeout must be 1..3600 seconds, got 0"
    )


def test_rdma_check_plans_the_nic_qos_numbers() -> None:
    out = run(
        "rdma_check",
        packages=["rdma-core"],
        kernel_modules=["mlx5_ib"],
        memlock_limit="unlimited",
        opensm="auto",
        opensm_priority=0,
        roce_qos={"dscp": 24},
    )
    assert (
        not out.get("failed")
        and out["plan"]["roce_qos"]["dscp"] == 24
        and out["plan"]["roce_qos"]["cos"] == 3
    )


def test_a_bad_argument_type_is_one_line_naming_the_plugin() -> None:
    with pytest.raises(AnsibleActionFail, match=r"^nccl_env_plan: .*ports"):
        run("nccl_env_plan", transport="tcp", socket_ifname="eth0", ports="mlx5_0", files=[{"dest": "/x"}])
