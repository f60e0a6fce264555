# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the train role: the launch plan, the shorthand overrides and the preflight report."""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.rdmaops.cluster.plugins.module_utils.train.launch import (
    LaunchError,
    launch_plan,
    merge_overrides,
)
from ansible_collections.rdmaops.cluster.plugins.module_utils.train.preflight import preflight_report


def train_launch_plan(resolved: Any, hosts: Any, addresses: Any, **kwargs: Any) -> Any:
    try:
        return launch_plan(resolved, list(hosts), dict(addresses), **kwargs)
    except LaunchError as exc:
        raise AnsibleFilterError(f"train_launch_plan: {exc}") from exc


def train_overrides(overrides: Any, steps: Any = None, warmup: Any = None, lr: Any = None) -> Any:
    try:
        return merge_overrides(overrides, {"steps": steps, "warmup": warmup, "lr": lr})
    except LaunchError as exc:
        raise AnsibleFilterError(f"train_overrides: {exc}") from exc


def train_preflight_report(facts: Any, hosts: Any, **kwargs: Any) -> Any:
    return preflight_report(dict(facts), list(hosts), **kwargs)


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "train_launch_plan": train_launch_plan,
            "train_overrides": train_overrides,
            "train_preflight_report": train_preflight_report,
        }
