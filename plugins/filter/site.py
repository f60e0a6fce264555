# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of site.yml's fast path (docs: the .yml files beside this one)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.rdmaops.cluster.plugins.module_utils.site import stamp as site_stamp


def inventory_digest(hostvars: Any, hosts: Any, code: str) -> str:
    if isinstance(hosts, str) or not hasattr(hosts, "__iter__"):
        raise AnsibleFilterError(f"inventory_digest: hosts must be a list of names, got {hosts!r}")
    raw_get = getattr(hostvars, "raw_get", None)
    variables: dict[str, Mapping[str, Any]] = {}
    for name in hosts:
        # raw_get gives the variables as written: a templated value counts by its text, and a value that
        # only templates later (after fact gathering) does not fail here
        found = raw_get(name) if raw_get is not None else hostvars[name]
        if not isinstance(found, Mapping):
            raise AnsibleFilterError(f"inventory_digest: no variables for host {name!r}")
        variables[str(name)] = found
    try:
        return site_stamp.inventory_digest(variables, code)
    except site_stamp.StampError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def source_digest(root: Any, parts: Any) -> str:
    if isinstance(parts, str):
        parts = [parts]
    try:
        return site_stamp.source_digest(str(root), [str(p) for p in parts])
    except site_stamp.StampError as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule:
    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"inventory_digest": inventory_digest, "source_digest": source_digest}
