# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters for verify.yml: links, rounds of disjoint pairs, parsing (docs: the .yml files beside this one).

Thin wrappers: the plan is module_utils/verify_plan, the parsers verify_parse and ping, the limits
verify_thresholds; their errors become AnsibleFilterError naming the filter.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import ping
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import verify as verify_qos
from ansible_collections.rdmaops.cluster.plugins.module_utils.verify import parse as verify_parse
from ansible_collections.rdmaops.cluster.plugins.module_utils.verify import plan as verify_plan
from ansible_collections.rdmaops.cluster.plugins.module_utils.verify.thresholds import thresholds


def _filter_errors(func: Callable[..., Any]) -> Callable[..., Any]:
    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except (verify_plan.VerifyError, ping.PingError) as exc:
            raise AnsibleFilterError(f"{func.__name__}: {exc}") from exc

    return wrapper


@_filter_errors
def verify_links(plans: Any, hosts: Any, pattern: str = "all_pairs") -> list[dict[str, Any]]:
    return verify_plan.links(dict(plans or {}), list(hosts or []), pattern)


@_filter_errors
def verify_schedule(
    links: Any, hosts: Any, pattern: str = "all_pairs", directions: str = "both", max_concurrent: Any = 0
) -> list[list[dict[str, Any]]]:
    return verify_plan.schedule(links, list(hosts or []), pattern, directions, max_concurrent)


@_filter_errors
def verify_role(round_: Any, host: str) -> dict[str, Any]:
    return verify_plan.role_in_round(list(round_ or []), host)


@_filter_errors
def verify_ping(text: Any) -> dict[str, Any]:
    return ping.rtt_stats(text)


@_filter_errors
def verify_thresholds(limits: Any) -> dict[str, Any]:
    if not isinstance(limits, dict):
        raise verify_plan.VerifyError(f"thresholds must be a mapping, got {limits!r}")
    return thresholds(**limits)


@_filter_errors
def verify_gate(
    port_info: Any, host: str, rdma_required: Any = True, require_active: Any = True, sysfs_root: str = "/sys"
) -> dict[str, Any]:
    return verify_parse.gate(port_info, host, rdma_required, require_active, sysfs_root)


@_filter_errors
def verify_env_file(text: Any) -> dict[str, str]:
    return verify_parse.parse_env_file(text)


@_filter_errors
def verify_collective(runs: Any, master: str) -> dict[str, Any]:
    return verify_parse.collective_result(dict(runs or {}), master)


def verify_qos_section(roce: Any, switch_results: Any, hosts: Any) -> dict[str, Any]:
    switches = dict(verify_qos.switch_input(r) for r in switch_results or [])
    raw = {
        h: verify_qos.host_input(v or {}, verify_parse.parse_env_file) for h, v in dict(hosts or {}).items()
    }
    return verify_qos.qos_section(dict(roce), switches, raw)


class FilterModule:
    def filters(self) -> dict[str, Callable[..., Any]]:
        return {
            "verify_qos_section": verify_qos_section,
            "verify_links": verify_links,
            "verify_schedule": verify_schedule,
            "verify_role": verify_role,
            "verify_ping": verify_ping,
            "verify_thresholds": verify_thresholds,
            "verify_gate": verify_gate,
            "verify_env_file": verify_env_file,
            "verify_collective": verify_collective,
        }
