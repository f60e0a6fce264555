# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Probe every data path of a node in one module call (the mesh_network role's verify checks).

A path check (module_utils.mesh.reachability.path_checks) names a peer address, the interface its route
must take and a don't-fragment payload. For each one this runs `ip -j route get ADDRESS` and a DF ping,
and joins the answers with reachability.verify_results. The route lookups take milliseconds and run one
after another; the pings wait on the network, so they run side by side: a node's probe takes about one
ping's time however many peers it has. Doing this in one call instead of one module call per command saves
a second of node CPU per path on a small machine (docs/benchmarks.md, issue 14).
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import ping as ping_cmd
from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import reachability

# What a command left: rc, stdout, stderr, as a registered ansible.builtin.command result names them.
Result = dict[str, Any]
Runner = Callable[[Sequence[Sequence[str]], float], list[Result]]

# Pings in flight at once: enough for any mesh (a 16-node mesh has 30 checks per node), and a bound on
# the processes a large switched fabric (one check per peer) starts at a time.
MAX_PARALLEL = 32

REQUIRED_KEYS = ("dst", "kind", "address", "expected_dev", "size")


class PathProbeError(ValueError):
    """Bad input; the message names the value."""


def run_parallel(
    commands: Sequence[Sequence[str]], timeout: float, max_parallel: int | None = None
) -> list[Result]:
    """Run the commands, up to ``max_parallel`` (default MAX_PARALLEL) at a time; results in the order given.

    A command that cannot start, or runs past ``timeout`` seconds (then killed), gets rc 127 or 124
    and the reason in stderr, as a shell would report it, instead of an exception.
    """
    results: list[Result] = []
    step = max(1, max_parallel or MAX_PARALLEL)
    for start in range(0, len(commands), step):
        batch = commands[start : start + step]
        procs: list[subprocess.Popen[str] | Result] = []
        for argv in batch:
            try:
                procs.append(
                    # subprocess, not run_command: the probes run in parallel, each killed at its timeout
                    subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # pylint: disable=ansible-bad-function
                )
            except OSError as exc:
                procs.append({"rc": 127, "stdout": "", "stderr": f"{argv[0]}: {exc.strerror}"})
        for argv, proc in zip(batch, procs, strict=True):
            if isinstance(proc, dict):
                results.append(proc)
                continue
            try:
                out, err = proc.communicate(timeout=timeout)
                results.append({"rc": proc.returncode, "stdout": out, "stderr": err})
            except subprocess.TimeoutExpired:
                proc.kill()
                out, err = proc.communicate()
                results.append(
                    {"rc": 124, "stdout": out, "stderr": f"{argv[0]}: no answer within {timeout:g} s"}
                )
    return results


def check_checks(checks: Any) -> list[Mapping[str, Any]]:
    """The checks as given, or PathProbeError naming the first that lacks a key."""
    if not isinstance(checks, (list, tuple)):
        raise PathProbeError(f"checks {checks!r} is not a list of path checks")
    for check in checks:
        if not isinstance(check, Mapping):
            raise PathProbeError(f"path check {check!r} is not a mapping")
        missing = [key for key in REQUIRED_KEYS if key not in check]
        if missing:
            raise PathProbeError(f"path check {dict(check)!r} lacks {', '.join(missing)}")
    return list(checks)


def probe(
    checks: Any,
    *,
    count: int = 2,
    interval: float = 0.2,
    wait_s: int = 2,
    runner: Runner = run_parallel,
) -> list[dict[str, Any]]:
    """Route and DF-ping every check; the mesh_verify_results entries (ok, dev, rtt_ms, error...)."""
    valid = check_checks(checks)
    if not valid:
        return []
    # A fabric rail's check asks the route from its own address: its source rule picks the rail's table.
    routes = [
        ["ip", "-j", "route", "get", str(check["address"])]
        + (["from", str(check["source"])] if check.get("rail") and check.get("source") else [])
        for check in valid
    ]
    pings = [
        ping_cmd.argv(
            str(check["address"]),
            count=count,
            interval=interval,
            wait_s=wait_s,
            size=int(check.get("size") or 0),
            source=str(check.get("source") or "") or None,
        )
        for check in valid
    ]
    # A ping ends after count x interval plus the last reply's wait; the rest is for a slow start.
    ping_timeout = count * interval + wait_s + 5
    route_results: list[Result] = []
    for argv in routes:
        # One at a time: a lookup is a netlink round trip, and the pings should not start before all of them.
        route_results += runner([argv], 10)
    return reachability.verify_results(valid, route_results, runner(pings, ping_timeout))
