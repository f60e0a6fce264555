"""The modules behind an action plugin (the role phases, train_watch, site_digest): each file holds the
documentation and argument spec; run as a plain module, main() refuses with its own name."""

from __future__ import annotations

import ast
import importlib
import types

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils.phase_module import refuse_without_action

from ..conftest import ROOT, RunModule

PLUGINS = ROOT / "plugins"
ACTION_BACKED = sorted(
    p.stem for p in (PLUGINS / "action").glob("*.py") if (PLUGINS / "modules" / p.name).exists()
)


def test_there_are_action_backed_modules() -> None:
    assert {"rdma_check", "train_plan", "train_watch", "verify_gate", "mesh_network_check"} <= set(
        ACTION_BACKED
    )


@pytest.mark.parametrize("name", ACTION_BACKED)
def test_main_only_refuses_with_its_own_name(name: str) -> None:
    tree = ast.parse((PLUGINS / "modules" / f"{name}.py").read_text())
    main = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "main")
    assert len(main.body) == 1, f"{name}: main() does more than refuse"
    call = main.body[0].value  # type: ignore[attr-defined]
    assert isinstance(call, ast.Call) and ast.unparse(call.func) == "refuse_without_action"
    assert ast.literal_eval(call.args[0]) == name
    # the spec it passes is the argument spec the module imports (what validate-modules reads)
    module = importlib.import_module(f"ansible_collections.rdmaops.cluster.plugins.modules.{name}")
    spec = getattr(module, ast.unparse(call.args[1]))
    assert isinstance(spec, dict) and spec and all("type" in option for option in spec.values())


def test_refusal_names_the_module(run_module: RunModule) -> None:
    fake = types.ModuleType("fake")
    fake.main = lambda: refuse_without_action("some_check", {"value": {"type": "str"}})  # type: ignore[attr-defined]
    result = run_module(fake, value="x")
    assert result["failed"] is True
    assert result["msg"] == "some_check runs on the controller through its action plugin (rdmaops.cluster)"
