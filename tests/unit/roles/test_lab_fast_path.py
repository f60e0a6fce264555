"""lab.yml's fast path: the digest of the lab settings is taken before the run registers anything, and leaves
out exactly what a run registers or sets (else no run would ever match the last one) and what needs a loop."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

ROLE = Path(__file__).resolve().parents[3] / "roles/lab"
VARS = yaml.safe_load((ROLE / "vars/main.yml").read_text())
UNRECORDED = re.compile(VARS["lab_stamp_unrecorded"].strip())
# Set to their own value, once per run (present.yml): the digest sees the same value either way.
FIXED = {"lab_base_id", "lab_wheelhouse_id"}


def _tasks(name: str) -> list[dict[str, Any]]:
    return yaml.safe_load((ROLE / "tasks" / name).read_text())


def _set_names(task: dict[str, Any]) -> set[str]:
    names = set(task.get("ansible.builtin.set_fact", {}) or {})
    if "register" in task:
        names.add(task["register"])
    return names


def test_what_a_run_registers_or_sets_is_left_out_of_the_digest() -> None:
    for path in sorted((ROLE / "tasks").glob("*.yml")):
        for task in _tasks(path.name):
            for name in _set_names(task) - FIXED:
                assert UNRECORDED.match(name), (
                    f"{path.name}: {task['name']!r} sets {name}, which the digest reads"
                )


def test_settings_are_in_the_digest() -> None:
    for name in (
        "lab_nodes",
        "lab_topology",
        "lab_mgmt_cidr",
        "lab_switches",
        "lab_base_packages",
        "lab_plan",
    ):
        assert not UNRECORDED.match(name), name


def test_vars_that_need_a_loop_item_are_left_out() -> None:
    for name, value in VARS.items():
        if re.search(r"\bitem\b", str(value)):
            assert UNRECORDED.match(name), f"{name} needs a loop's item"


def test_the_check_comes_before_the_build_and_the_record_last() -> None:
    present = _tasks("present.yml")
    names = [next(iter(_set_names(t)), "") for t in present]
    digest = next(i for i, t in enumerate(present) if "lab_stamp_digest" in _set_names(t))
    # before the digest only the ids are fixed: nothing registered, no module run
    assert all(_set_names(t) <= FIXED for t in present[:digest]), names
    check = next(i for i, t in enumerate(present) if "rdmaops.cluster.lab_stamp" in t)
    build = next(i for i, t in enumerate(present) if t.get("ansible.builtin.include_tasks") == "build.yml")
    assert digest < check < build
    assert "lab_stamp_check.current" in present[build]["when"]
    record = _tasks("build.yml")[-1]
    assert record["rdmaops.cluster.lab_stamp"]["state"] == "present"
