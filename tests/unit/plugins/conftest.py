"""The harnesses that run a module's main() or an action plugin in this process, as Ansible would."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any
from unittest.mock import MagicMock

import pytest
from ansible.module_utils import basic
from ansible.module_utils.common.text.converters import to_bytes
from ansible.playbook.play_context import PlayContext

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


def run_action(
    plugin_class: type,
    args: dict[str, Any],
    *,
    task_vars: dict[str, Any] | None = None,
    check_mode: bool = False,
) -> dict[str, Any]:
    """An action plugin's result for a task with ARGS (no connection: the phases run on the controller)."""
    task = MagicMock()
    task.args = args
    task.async_val = 0
    task.check_mode = check_mode
    plugin = plugin_class(task, MagicMock(), PlayContext(), MagicMock(), MagicMock(), MagicMock())
    result: dict[str, Any] = plugin.run(task_vars=task_vars or {})
    return result


# Recorded tool outputs and trees (tests/unit/fixtures/<tool>/, each with its SOURCES.md).
FIXTURE_DIR = Path(__file__).resolve().parents[1] / "fixtures"
