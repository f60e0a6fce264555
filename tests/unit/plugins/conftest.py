"""The one harness that runs a module's main() in this process with arguments, as Ansible would."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from ansible.module_utils import basic
from ansible.module_utils.common.text.converters import to_bytes

RunModule = Callable[..., dict[str, Any]]


@pytest.fixture
def run_module(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> RunModule:
    """run_module(module, **args): the module's JSON result (it exits through exit_json/fail_json)."""

    def run(module: ModuleType, **args: Any) -> dict[str, Any]:
        monkeypatch.setattr(basic, "_ANSIBLE_ARGS", to_bytes(json.dumps({"ANSIBLE_MODULE_ARGS": args})))
        monkeypatch.setattr(basic, "_ANSIBLE_PROFILE", "legacy", raising=False)
        capsys.readouterr()
        with pytest.raises(SystemExit):
            module.main()
        return json.loads(capsys.readouterr().out)

    return run


# Recorded tool outputs and trees (tests/unit/fixtures/<tool>/, each with its SOURCES.md).
FIXTURE_DIR = Path(__file__).resolve().parents[1] / "fixtures"
