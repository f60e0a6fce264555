# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that let roles skip work on a no-change run (docs: the .yml files beside this one); logic:
module_utils/site/digests.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.rdmaops.cluster.plugins.module_utils.site import digests as stamps


def tree_digest(tree: Any) -> str:
    if isinstance(tree, (str, bytes)) or not hasattr(tree, "__iter__"):
        raise AnsibleFilterError(f"tree_digest: expected a list of files, got {type(tree).__name__}")
    try:
        return stamps.tree_digest(tree)
    except stamps.StampError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def missing_packages(wanted: Any, dpkg_lines: Any) -> list[str]:
    if isinstance(wanted, str):
        wanted = [wanted]
    if isinstance(dpkg_lines, str):
        dpkg_lines = dpkg_lines.splitlines()
    try:
        return stamps.missing_packages(wanted, dpkg_lines or [])
    except stamps.StampError as exc:
        raise AnsibleFilterError(f"missing_packages: {exc}") from exc


class FilterModule:
    def filters(self) -> dict[str, Callable[..., Any]]:
        return {
            "tree_digest": tree_digest,
            "missing_packages": missing_packages,
        }
