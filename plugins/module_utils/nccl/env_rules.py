# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rules for the inputs of a node's NCCL/gloo environment, one function each.

Each returns a list of messages (empty when the value is fine) and takes ``name``, what the
message calls the value: the nccl_env role's validate step passes its variable names, the
rdmaops.cluster.nccl_env filter its own words; both get the same rule.
"""

from __future__ import annotations

import re
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.qos.roce import RANGES, integer_errors

TRANSPORTS = ("rdma", "tcp")
# NCCL's socket transport (src/transport/net_socket.cc): at most 16 helper threads (MAX_THREADS) and 64
# sockets per connection in all (MAX_SOCKETS); larger values are cut with a warning, so refuse them here.
MAX_SOCKET_THREADS = 16
MAX_SOCKETS = 64
# Linux interface names: at most 15 bytes (IFNAMSIZ - 1), no blanks or slashes.
_IFNAME = re.compile(r"[A-Za-z0-9_.:@-]{1,15}")


def _shown(value: Any) -> str:
    # str(): a plain str, so an Ansible-tagged string reads like any other in the message.
    return repr(str(value)) if isinstance(value, str) else repr(value)


def transport_errors(transport: Any, name: str) -> list[str]:
    """The transport is rdma or tcp."""
    if isinstance(transport, str) and transport in TRANSPORTS:
        return []
    return [f"{name} must be 'rdma' or 'tcp', got {_shown(transport)}"]


def socket_ifname_errors(ifname: Any, name: str) -> list[str]:
    """The socket interface is a valid Linux interface name, or a comma-separated list of them (the fabric
    ports of several rails, as mesh_network exports them; gloo takes the first)."""
    if ifname and all(_IFNAME.fullmatch(part) for part in str(ifname).split(",")):
        return []
    return [f"{name} {_shown(ifname)} is not a valid interface name"]


def rails_errors(rails: Any, name: str) -> list[str]:
    """The fabric ports in rail order: a list of distinct interface names (empty: no rails)."""
    if not isinstance(rails, (list, tuple)):
        return [f"{name} must be a list of interface names in rail order, got {_shown(rails)}"]
    bad = [r for r in rails if not isinstance(r, str) or not _IFNAME.fullmatch(r)]
    if bad:
        return [f"{name}: {', '.join(_shown(r) for r in bad)} is not a valid interface name"]
    twice = sorted({r for r in rails if rails.count(r) > 1})
    if twice:
        return [f"{name}: {', '.join(twice)} is listed twice (one port per rail)"]
    return []


def dscp_errors(dscp: Any, name: str) -> list[str]:
    """DSCP is a whole number (an integer, or a string of digits) in 0..63: roce_qos's rule."""
    return integer_errors(dscp, name, *RANGES["dscp"])


def socket_threads_errors(nthreads: Any, nsocks_per_thread: Any, names: tuple[str, str]) -> list[str]:
    """NCCL_SOCKET_NTHREADS and NCCL_NSOCKS_PERTHREAD: both unset (NCCL's defaults), or whole numbers with
    1..16 threads and at most 64 sockets in all (NCCL's limits)."""
    if nthreads is None and nsocks_per_thread is None:
        return []
    if nthreads is None or nsocks_per_thread is None:
        got = f"{_shown(nthreads)} and {_shown(nsocks_per_thread)}"
        return [f"set both {names[0]} and {names[1]} or neither, got {got}"]
    errors = integer_errors(nthreads, names[0], 1, MAX_SOCKET_THREADS) + integer_errors(
        nsocks_per_thread, names[1], 1, MAX_SOCKETS
    )
    total = 0 if errors else int(nthreads) * int(nsocks_per_thread)
    if total > MAX_SOCKETS:
        errors.append(
            f"{names[0]} x {names[1]} = {total} sockets per connection, NCCL's socket transport allows at"
            f" most {MAX_SOCKETS}"
        )
    return errors
