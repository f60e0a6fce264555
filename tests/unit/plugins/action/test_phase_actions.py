"""Each role-phase action plugin: arguments through PhaseAction, one message for all errors, or the plan."""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible.errors import AnsibleActionFail

from ..conftest import ROOT, run_action

ACTIONS = [
    "switch_qos_check",
    "nccl_env_check",
    "nccl_env_plan",
    "nccl_mesh_plugin_check",
    "rdma_check",
    "slurm_check",
    "slurm_plan",
    "slurm_config",
    "python_env_check",
    "python_env_plan",
    "lab_check",
    "train_check",
    "train_plan",
    "verify_check",
]


def run(name: str, task_vars: dict[str, Any] | None = None, **args: Any) -> dict[str, Any]:
    module = importlib.import_module(f"ansible_collections.rdmaops.cluster.plugins.action.{name}")
    return run_action(module.ActionModule, args, task_vars=task_vars)


@pytest.mark.parametrize("name", ACTIONS)
def test_each_action_documents_the_spec_it_checks(name: str) -> None:
    action = importlib.import_module(
        f"ansible_collections.rdmaops.cluster.plugins.action.{name}"
    ).ActionModule
    doc = importlib.import_module(f"ansible_collections.rdmaops.cluster.plugins.modules.{name}")
    assert name == action.NAME and f"module: {name}\n" in doc.DOCUMENTATION
    # the module's own options and those of the collection's doc fragments it extends
    documented = yaml.safe_load(doc.DOCUMENTATION)
    options = dict(documented.get("options") or {})
    for fragment in documented.get("extends_documentation_fragment") or []:
        # rdmaops.cluster.<file>[.<part>]: a part is the fragment class's attribute of that name, upper-cased
        short, _dot, part = fragment.removeprefix("rdmaops.cluster.").partition(".")
        fragments = importlib.import_module(
            f"ansible_collections.rdmaops.cluster.plugins.doc_fragments.{short}"
        ).ModuleDocFragment
        text = getattr(fragments, part.upper() or "DOCUMENTATION")
        options.update(yaml.safe_load(text).get("options") or {})
    for option in action.ARGUMENT_SPEC:
        assert option in options, f"{name}: option {option} is not documented"


PHASE_ACTIONS = sorted(
    path.stem for path in (ROOT / "plugins" / "action").glob("*.py") if "(PhaseAction)" in path.read_text()
)


@pytest.mark.parametrize("name", PHASE_ACTIONS)
def test_each_phase_file_names_the_spec_after_its_module_and_opens_alike(name: str) -> None:
    """CONTRIBUTING's rules: the argument spec of module <name> is <NAME>_SPEC, and a phase file's docstring
    opens "The <role> role's <names> phase(s): <inputs> in, ``{errors, plan}`` out"."""
    action = importlib.import_module(
        f"ansible_collections.rdmaops.cluster.plugins.action.{name}"
    ).ActionModule
    phases = inspect.getmodule(action.PHASE)
    assert getattr(phases, f"{name.upper()}_SPEC", None) is action.ARGUMENT_SPEC
    opening = " ".join((phases.__doc__ or "").split("\n\n")[0].split())
    assert re.match(r"The \S.*? phases?: .+ in, ``\{errors, plan\}`` out\b", opening), opening


# How a module or an action plugin hands its spec constant over: with the name it gives, or as its own
NAMED = (r'refuse_without_action\("(\w+)", (\w+)\)', r'task_args\("(\w+)", (?:\w+\.)?(\w+),')
OWN = r"argument_spec=([A-Z][A-Z0-9_]*)\b"


def test_each_spec_constant_is_named_after_the_module_it_checks() -> None:
    handed: list[tuple[Path, str, str]] = []  # (file, module name, spec constant)
    for folder in ("modules", "action"):
        for path in sorted((ROOT / "plugins" / folder).glob("*.py")):
            text = path.read_text()
            handed += [(path, name, spec) for pattern in NAMED for name, spec in re.findall(pattern, text)]
            handed += [(path, path.stem, spec) for spec in re.findall(OWN, text)]
    assert {*PHASE_ACTIONS, "lab_fabric", "switch_qos", "train_watch"} <= {h[0].stem for h in handed}
    wrong = [h for h in handed if h[1:] != (h[0].stem, f"{h[0].stem.upper()}_SPEC")]
    assert wrong == []


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


def test_slurm_config_plans_each_host() -> None:
    out = run("slurm_config", texts={"node1": "ClusterName=a\n"}, current={"node1": "ClusterName=a\n"})
    assert not out.get("failed") and out["plan"] == {"actions": {"node1": {"action": "none", "why": []}}}


class FakeHostvars(dict[str, Any]):
    """ansible's HostVars: raw_get gives a host's variables untemplated (a lookup there would fail)."""

    def raw_get(self, name: str) -> Any:
        return self.get(name)  # ansible: a marker of an undefined host, not a mapping


def test_site_digest_reads_raw_variables_and_the_code(tmp_path: Path) -> None:
    doc = importlib.import_module("ansible_collections.rdmaops.cluster.plugins.modules.site_digest")
    assert set(yaml.safe_load(doc.DOCUMENTATION)["options"]) == set(doc.SITE_DIGEST_SPEC)
    (tmp_path / "roles").mkdir()
    (tmp_path / "roles" / "main.yml").write_text("x: 1\n")
    hv = {"hostvars": FakeHostvars(n1={"x": "{{ undefined_until_facts }}"}, n2={"x": 1})}
    args: dict[str, Any] = {"hosts": ["n1", "n2"], "code_root": str(tmp_path), "code_parts": ["roles"]}
    first = run("site_digest", hv, **args)
    assert first["changed"] is False and len(first["digest"]) == 64
    assert run("site_digest", hv, **{**args, "hosts": ["n2", "n1"]})["digest"] == first["digest"]
    assert run("site_digest", hv, **{**args, "hosts": ["n1"]})["digest"] != first["digest"]
    (tmp_path / "roles" / "main.yml").write_text("x: 2\n")
    assert run("site_digest", hv, **args)["digest"] != first["digest"]
    with pytest.raises(AnsibleActionFail, match="no variables for host 'n9'"):
        run("site_digest", hv, **{**args, "hosts": ["n9"]})
    with pytest.raises(AnsibleActionFail, match="does not exist"):
        run("site_digest", hv, **{**args, "code_parts": ["nope"]})
