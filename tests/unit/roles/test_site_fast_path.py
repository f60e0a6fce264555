"""site.yml's fast path watches what every node role manages: a role added to site.yml without a watch, or a
node play that does not wait for the fast path's decision, fails here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2
import yaml

ROOT = Path(__file__).resolve().parents[3]
SITE = yaml.safe_load((ROOT / "playbooks/site.yml").read_text())
PREFIX = "rdmaops.cluster."


def _roles(play: dict[str, Any]) -> list[str]:
    names = [r["role"] if isinstance(r, dict) else r for r in play.get("roles", [])]
    for task in play.get("tasks", []):
        include = task.get("ansible.builtin.include_role") or task.get("ansible.builtin.import_role")
        if include:
            names.append(include["name"])
    return [n.removeprefix(PREFIX) for n in names]


SWITCHES = "groups['switches'] | default([])"


def _node_plays() -> list[dict[str, Any]]:
    return [p for p in SITE if any(_roles(p)) and p["hosts"].strip("{} ") != SWITCHES]


def test_the_digest_is_the_first_task_of_the_run() -> None:
    # a task before it would register or set variables, which are host variables too (with timings)
    first = SITE[0]["tasks"][0]
    assert "rdmaops.cluster.site_digest" in first and first["register"] == "rdmaops_site_digest"
    assert first["run_once"] is True
    assert not SITE[0].get("gather_facts") and not SITE[0].get("roles")


def test_every_node_play_runs_only_on_the_nodes_to_converge() -> None:
    plays = _node_plays()
    assert len(plays) >= 5
    for play in plays:
        assert play["hosts"] == "{{ groups['rdmaops_site_converge'] | default([]) }}", play["name"]
    assert SITE[-1]["hosts"] == "{{ groups['rdmaops_site_converge'] | default([]) }}"


def test_every_node_role_exports_a_watch_and_the_stamp_records_it() -> None:
    roles = {r for play in _node_plays() for r in _roles(play)}
    assert roles == {"mesh_network", "rdma", "python_env", "nccl_mesh_plugin", "nccl_env", "slurm"}
    stamp_task = SITE[-1]["tasks"][0]
    watch = stamp_task["rdmaops.cluster.site_stamp"]["watch"]
    assert set(watch) == roles
    for role in roles:
        assert watch[role] == f"{{{{ {role}_site_watch | default({{}}) }}}}"
        tasks = yaml.safe_load((ROOT / "roles" / role / "tasks/main.yml").read_text())
        exports = [t for t in tasks if f"{role}_site_watch" in t.get("ansible.builtin.set_fact", {})]
        assert len(exports) == 1, role
        assert tasks[-1] is exports[0], f"{role}: the watch is exported last, after everything it names"
        kinds = set(exports[0]["ansible.builtin.set_fact"][f"{role}_site_watch"])
        assert kinds <= {"files", "services", "packages", "globs", "addresses"}, role


def test_the_stamp_is_not_written_by_a_run_that_left_tasks_out() -> None:
    stamp_task = SITE[-1]["tasks"][0]
    assert stamp_task["when"] == "ansible_run_tags | list == ['all'] and ansible_skip_tags | length == 0"
    assert stamp_task["rdmaops.cluster.site_stamp"]["state"] == "present"


def test_the_nothing_to_do_message_counts_what_is_watched() -> None:
    # rendered as Ansible does (Jinja2); the counts once printed as "value key, value key"
    task = next(t for t in SITE[0]["tasks"] if t["name"] == "Say that nothing is to do")
    text = (
        jinja2.Environment()
        .from_string(task["ansible.builtin.debug"]["msg"])
        .render(
            ansible_play_hosts=["node1", "node2"],
            inventory_hostname="node1",
            rdmaops_site_check={"watched": {"files": 9, "services": 4}},
        )
    )
    assert "Watched on node1: 9 files, 4 services. RDMAOPS_FAST_PATH=0" in text
