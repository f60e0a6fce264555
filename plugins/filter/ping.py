# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that build ping command lines for tasks (docs: the .yml files beside this one).

The command line is module_utils/mesh/ping.py's, the one the modules use, so a task that runs ping with
ansible.builtin.command pings the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import ping


def ping_argv(
    target: Any,
    count: int = 1,
    interval: Any = None,
    wait_s: Any = None,
    size: Any = None,
    source: Any = None,
    quiet: bool = False,
) -> list[str]:
    """``target`` is an address or a mapping with ``address`` and optionally ``size`` and ``source``
    (a path check or a netplan_apply check target); arguments given here win over the mapping's."""
    if isinstance(target, Mapping):
        if not target.get("address"):
            raise AnsibleFilterError(f"ping_argv: target {dict(target)!r} has no address")
        address = str(target["address"])
        size = target.get("size") if size is None else size
        source = target.get("source") if source is None else source
    elif isinstance(target, str) and target:
        address = target
    else:
        raise AnsibleFilterError(f"ping_argv: target {target!r} is neither an address nor a mapping")
    try:
        payload = int(size or 0)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError(f"ping_argv: size {size!r} is not a whole number") from exc
    return ping.argv(
        address, count=count, interval=interval, wait_s=wait_s, size=payload, source=source, quiet=quiet
    )


class FilterModule:
    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"ping_argv": ping_argv}
