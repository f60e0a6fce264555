"""Each default has one owner, the role's defaults/main.yml: the argument specs declare the same values, the
defaults make a valid plan, production defaults do not know the lab, and the lab's generated inventory sets
what the lab needs instead."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2
import pytest
import yaml

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import addressing as ma
from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import data_ports

ROOT = Path(__file__).resolve().parents[3]
ROLES = ["mesh_network", "nccl_env", "verify", "python_env", "nccl_mesh_plugin"]


def defaults(role: str) -> dict[str, Any]:
    return yaml.safe_load((ROOT / "roles" / role / "defaults" / "main.yml").read_text())


def spec_options(role: str) -> dict[str, dict[str, Any]]:
    specs = yaml.safe_load((ROOT / "roles" / role / "meta" / "argument_specs.yml").read_text())
    return specs["argument_specs"]["main"]["options"]


@pytest.mark.parametrize("role", ROLES)
def test_argument_spec_defaults_equal_the_role_defaults(role: str) -> None:
    values = defaults(role)
    for name, option in spec_options(role).items():
        if "default" in option:
            assert name in values, (
                f"{role}: {name} has a default in argument_specs but not in defaults/main.yml"
            )
            assert option["default"] == values[name], f"{role}: {name}"


@pytest.mark.parametrize("role", ["nccl_env", "verify", "python_env"])
def test_production_defaults_do_not_know_the_lab(role: str) -> None:
    for part in ("defaults/main.yml", "meta/argument_specs.yml"):
        assert "rdmaops_lab" not in (ROOT / "roles" / role / part).read_text(), f"{role}/{part}"


def test_mesh_network_defaults_make_a_valid_plan() -> None:
    d = defaults("mesh_network")
    pools = {
        "mesh_network_link_pool": d["mesh_network_link_pool"],
        "mesh_network_node_pool": d["mesh_network_node_pool"],
    }
    assert data_ports.mtu_errors(d["mesh_network_mtu"], "mesh_network_mtu") == []
    assert ma.pool_errors(pools, "10.0.0.0/24") == []
    hosts = [f"node{i}" for i in range(1, 9)]
    for topology in ("mesh", "switched"):
        assert (
            ma.plan_errors(
                hosts,
                topology,
                d["mesh_network_link_pool"],
                d["mesh_network_link_prefix"],
                d["mesh_network_node_pool"],
                d["mesh_network_fabric_subnet"],
            )
            == []
        )


def lab_group_vars() -> dict[str, Any]:
    lab = yaml.safe_load((ROOT / "roles/lab/defaults/main.yml").read_text())
    template = (ROOT / "roles/lab/templates/group_vars_all.yml.j2").read_text()
    context = {
        **lab,
        "lab_name": "mol",
        "lab_plan": {
            "topology": "mesh",
            "mgmt_cidr": "10.98.0.0/24",
            "mgmt_host_ip": "10.98.0.1",
            "fabric_ports": 1,
        },
    }
    text = jinja2.Template(template, undefined=jinja2.StrictUndefined).render(context)
    return yaml.safe_load(text)


def test_lab_inventory_sets_what_the_lab_needs() -> None:
    got = lab_group_vars()
    mount = yaml.safe_load((ROOT / "roles/lab/defaults/main.yml").read_text())["lab_wheelhouse_mount"]
    # The values the roles' defaults chose from rdmaops_lab before the lab set them itself.
    assert got["nccl_transport"] == "tcp"
    assert got["verify_rdma_required"] is False
    assert got["verify_line_rate_gbps"] == "median"
    assert got["verify_min_fraction_of_line_rate"] == 0.5
    assert got["verify_min_gbps"] == 1
    assert (
        got["python_env_wheelhouse"] == got["verify_wheelhouse"] == got["rdmaops_lab"]["wheelhouse"] == mount
    )
    assert got["mesh_network_topology"] == "mesh" and got["mesh_network_mgmt_cidr"] == "10.98.0.0/24"


def test_production_defaults_differ_from_the_lab_only_where_the_lab_says_so() -> None:
    verify, python_env = defaults("verify"), defaults("python_env")
    assert verify["verify_rdma_required"] is True
    assert verify["verify_min_fraction_of_line_rate"] == 0.8
    assert verify["verify_min_gbps"] is None and verify["verify_line_rate_gbps"] is None
    assert python_env["python_env_wheelhouse"] == ""
    assert defaults("nccl_env")["nccl_env_transport"] == "{{ nccl_transport | default('rdma') }}"


@pytest.mark.parametrize("role", ["train", "verify", "slurm"])
def test_health_threshold_options_document_the_checks_own_defaults(role: str) -> None:
    """<role>_health_thresholds lists every threshold of health/findings.py with its default there (the role's
    own value is {}: only what is given overrides the checks' defaults)."""
    from ansible_collections.rdmaops.cluster.plugins.module_utils.node.health.findings import DEFAULTS

    option = spec_options(role)[f"{role}_health_thresholds"]
    assert defaults(role)[f"{role}_health_thresholds"] == {} == option["default"]
    assert set(option["options"]) == set(DEFAULTS)
    for name, sub in option["options"].items():
        if name == "rdma_counters":  # the table of docs/health.md, too long for a default here
            assert "default" not in sub
            continue
        assert sub["default"] == DEFAULTS[name], f"{role}: {name}"
    for name in (f"{role}_health_severity", f"{role}_health_sources"):
        assert defaults(role)[name] == {} == spec_options(role)[name]["default"]


@pytest.mark.parametrize(
    ("ports", "extra", "want"),
    [
        ({"node2": "data0", "node3": "data1"}, {}, ["data0", "data1"]),  # full mesh / ring: one port a peer
        ({"node2": ["data0", "data1"]}, {}, ["data0", "data1"]),  # rails: two cables to one peer
        ({}, {"mesh_network_fabric_port": "ens1f0"}, ["ens1f0"]),  # switched fabric
    ],
)
def test_verify_qos_ports_are_port_names_for_any_cabling(
    ports: dict[str, Any], extra: dict[str, Any], want: list[str]
) -> None:
    # a rails map's list once reached `dcb pfc show dev ['data0', 'data1']` (found on a rails lab)
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar, trust_as_template

    variables = {**defaults("verify"), "mesh_network_ports": ports, **extra}
    templar = Templar(loader=DataLoader(), variables=variables)
    # defaults/main.yml is trusted template text when Ansible loads it; yaml.safe_load's strings are not
    assert templar.template(trust_as_template(variables["verify_qos_ports"])) == want
