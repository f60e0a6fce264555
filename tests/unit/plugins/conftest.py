"""The harnesses that run a module's main() or an action plugin in this process, as Ansible would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
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


# The repository root: its ansible.cfg finds the collection through .collections (no install).
ROOT = Path(__file__).resolve().parents[3]
# Recorded tool outputs and trees (tests/unit/fixtures/<tool>/, each with its SOURCES.md).
FIXTURE_DIR = ROOT / "tests" / "unit" / "fixtures"


def ad_hoc(module: str, args: str, *extra: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`ansible localhost -c local -m MODULE -a ARGS EXTRA...`, the repository's ansible.cfg, ENV on top."""
    return subprocess.run(
        [
            str(Path(sys.executable).with_name("ansible")),
            "localhost",
            "-i",
            "localhost,",
            "-c",
            "local",
            "-e",
            f"ansible_python_interpreter={sys.executable}",
            "-m",
            module,
            "-a",
            args,
            *extra,
        ],
        cwd=ROOT,
        env={
            **os.environ,
            "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
            "ANSIBLE_LOCALHOST_WARNING": "False",
            "ANSIBLE_INVENTORY_UNPARSED_WARNING": "False",
            **env,
        },
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
