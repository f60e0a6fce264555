"""verify.yml measures and reports; on a node that is already set up its recap must say changed=0.

What it writes on the controller (the report under reports/) is its output, not a change to the cluster:
every task of the verify role that runs on the controller declares ``changed_when: false``. (verify.yml
reported changed=1 on every run for the report alone.)
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[3]
TASKS = ROOT / "roles" / "verify" / "tasks"


def _tasks(items: list[dict[str, Any]], where: str) -> Iterator[tuple[str, dict[str, Any]]]:
    for task in items or []:
        for key in ("block", "rescue", "always"):
            if key in task:
                yield from _tasks(task[key], where)
        if not any(k in task for k in ("block", "rescue", "always")):
            yield where, task


def test_controller_tasks_of_verify_report_no_change() -> None:
    seen, bad = 0, []
    for path in sorted(TASKS.glob("*.yml")):
        for where, task in _tasks(yaml.safe_load(path.read_text()), path.name):
            if task.get("delegate_to") != "localhost" or "ansible.builtin.debug" in task:
                continue
            seen += 1
            if task.get("changed_when") is not False:
                bad.append(f"{where}: {task.get('name')}")
    assert seen, "no controller task found: did the role's layout change?"
    assert not bad, f"controller tasks that would count as a change on a node: {bad}"
