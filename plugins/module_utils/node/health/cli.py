# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node-side command behind files/health/rdmaops-health, Slurm's HealthCheckProgram.

It runs the same checks as the node_health module (node.run) and prints one line per finding. In Slurm mode
(``"slurm": true`` in the config, since HealthCheckProgram takes no arguments; or --slurm) it drains this
node when a check fails, with the first failing check as the reason (prefixed "rdmaops-health:"), and
resumes it once every check passes again, but only when the drain is its own: a node an administrator
drained for another reason is left alone.

Exit status: 0 no failing check, 1 a check failed, 2 bad configuration or arguments, 3 scontrol failed. In
Slurm mode a failing check still exits 0 once the node is drained: slurmd runs HealthCheckProgram repeatedly
at start-up until it exits 0 and does not register before that (slurm.conf(5)), and a drained node that
registers is what lets the operator see the reason in ``sinfo -R``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
from typing import Any

from . import node as noderun
from .findings import failed, line, merge_thresholds, severity_errors

REASON_PREFIX = "rdmaops-health:"
REASON_MAX = 240  # keeps sinfo -R readable; the full list is in the command's output and the slurmd log
DEFAULT_CONFIG = "/etc/rdmaops/health.json"
DEFAULT_STATE = "/var/lib/rdmaops/health-state.json"
_CONFIG_KEYS = {
    "node",
    "slurm",
    "thresholds",
    "severity",
    "checkpoint_dir",
    "state_file",
    "sysfs_root",
    "sources",
}
_STATE_RE = re.compile(r"(?:^|\s)State=(\S+)")
# scontrol (src/api/node_info.c) prints "Reason=TEXT [user@time]", then the optional Comment=, Extra=,
# InstanceId=, InstanceType= and ReservationName= fields; the reason itself may contain spaces.
_REASON_RE = re.compile(
    r"(?:^|\s)Reason=(.*?)(?:\s\[[^\]]*@[^\]]*\]|\s(?:Comment|Extra|InstanceId|InstanceType|ReservationName)=|\s*$)"
)


class UsageError(Exception):
    pass


def _out(text: str) -> None:
    sys.stdout.write(text + "\n")


def _err(text: str) -> None:
    sys.stderr.write(text + "\n")


def drain_reason(fails: list[dict[str, Any]]) -> str:
    first = fails[0]
    text = f"{REASON_PREFIX} {first['check']} {first['subject']}: {first['message']}"
    text += f" (value {first['value']}, threshold {first['threshold']})"
    if len(fails) > 1:
        text += f"; +{len(fails) - 1} more"
    return text if len(text) <= REASON_MAX else text[: REASON_MAX - 3] + "..."


def parse_show_node(text: str) -> tuple[str, str]:
    """``scontrol -o show node NAME`` -> (State, Reason without its [user@time] suffix)."""
    state = _STATE_RE.search(text)
    reason = _REASON_RE.search(text.strip())
    return (state.group(1) if state else ""), (reason.group(1).strip() if reason else "")


def slurm_action(fails: list[dict[str, Any]], state: str, reason: str) -> tuple[str | None, str | None]:
    """("drain", reason), ("resume", None) or (None, None) for this node's State and Reason."""
    drained = "DRAIN" in state.upper()
    ours = reason.startswith(REASON_PREFIX)
    if fails:
        wanted = drain_reason(fails)
        if drained and not ours:
            return None, None  # an administrator's drain stays as it is
        if drained and reason == wanted:
            return None, None
        return "drain", wanted
    if drained and ours:
        return "resume", None
    return None, None


def _scontrol(args: list[str]) -> str:
    # subprocess, not run_command: node-side CLI (no AnsibleModule), and run_command has no timeout
    proc = subprocess.run(["scontrol", *args], capture_output=True, text=True, timeout=30, check=False)  # pylint: disable=ansible-bad-function
    if proc.returncode != 0:
        raise OSError(f"scontrol {' '.join(args)} exited {proc.returncode}: {proc.stderr.strip()[:300]}")
    return proc.stdout


def apply_slurm(node: str, fails: list[dict[str, Any]]) -> str:
    state, reason = parse_show_node(_scontrol(["-o", "show", "node", node]))
    action, text = slurm_action(fails, state, reason)
    if action == "drain":
        _scontrol(["update", f"NodeName={node}", "State=DRAIN", f"Reason={text}"])
        return f"drained {node}: {text}"
    if action == "resume":
        _scontrol(["update", f"NodeName={node}", "State=RESUME"])
        return f"resumed {node} (was drained for: {reason})"
    return f"{node}: state {state or '?'}, nothing to change"


def load_config(path: str | None) -> dict[str, Any]:
    if path == "":
        return {}
    if path is None:
        if not os.path.exists(DEFAULT_CONFIG):
            return {}
        path = DEFAULT_CONFIG
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError) as exc:
        raise UsageError(f"config {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise UsageError(f"config {path}: expected a JSON object")
    unknown = set(data) - _CONFIG_KEYS
    if unknown:
        raise UsageError(f"config {path}: unknown keys {sorted(unknown)} (known: {sorted(_CONFIG_KEYS)})")
    return data


def _pairs(items: list[str], what: str) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"{what} {item!r}: expected KEY=VALUE")
        out[key] = value
    return out


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="rdmaops-health",
        description="GPU, RDMA and host health checks of this node; with --slurm, drain it on a failing "
        "check "
        "and resume it when the checks pass again.",
    )
    p.add_argument(
        "--config",
        help=f"JSON: node, thresholds, severity, checkpoint_dir... (default {DEFAULT_CONFIG}; '' for none)",
    )
    p.add_argument("--node", help="Slurm node name (default: config, else the short host name)")
    p.add_argument(
        "--state-file", help=f"counter baseline between checks (default {DEFAULT_STATE}; '' for none)"
    )
    p.add_argument("--checkpoint-dir", help="directory whose free space host.disk_free checks")
    p.add_argument("--sysfs-root", help="where sysfs is mounted (default /sys)")
    p.add_argument(
        "--threshold", action="append", default=[], metavar="KEY=JSON", help="override one threshold"
    )
    p.add_argument("--severity", action="append", default=[], metavar="CHECK=LEVEL", help="fail, warn or off")
    p.add_argument("--source", action="append", default=[], metavar="KEY=FILE", help="FILE instead of a tool")
    # slurm.conf's HealthCheckProgram is a path without arguments: the config's "slurm": true turns this on.
    p.add_argument("--slurm", action="store_true", default=None, help="drain/resume this node with scontrol")
    p.add_argument(
        "--no-slurm", dest="slurm", action="store_false", help="only report, whatever the config says"
    )
    p.add_argument("--json", action="store_true", help="print the whole report as JSON")
    p.add_argument(
        "--ack-xids", action="store_true", help="mark the Xids logged so far as dealt with, then exit"
    )
    return p


def _settings(args: argparse.Namespace) -> dict[str, Any]:
    config = load_config(args.config)
    user = dict(config.get("thresholds") or {})
    for key, raw in _pairs(args.threshold, "--threshold").items():
        try:
            user[key] = json.loads(raw)
        except ValueError:
            user[key] = raw  # a bare word, e.g. rdma_width=4X
    thresholds, errors = merge_thresholds(user)
    severity = dict(config.get("severity") or {})
    severity.update(_pairs(args.severity, "--severity"))
    errors += severity_errors(severity)
    if errors:
        raise UsageError("; ".join(errors))
    sources = dict(config.get("sources") or {})
    sources.update(_pairs(args.source, "--source"))
    state_file = args.state_file if args.state_file is not None else config.get("state_file", DEFAULT_STATE)
    slurm = config.get("slurm", False) if args.slurm is None else args.slurm
    if not isinstance(slurm, bool):
        raise UsageError(f"config: slurm must be true or false, got {slurm!r}")
    return {
        "slurm": slurm,
        "node": args.node or config.get("node") or socket.gethostname().split(".")[0],
        "thresholds": thresholds,
        "severity": severity,
        "sources": sources,
        "state_file": state_file or None,
        "checkpoint_dir": args.checkpoint_dir or config.get("checkpoint_dir") or None,
        "sysfs_root": args.sysfs_root or config.get("sysfs_root") or "/sys",
    }


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        cfg = _settings(args)
    except UsageError as exc:
        _err(f"rdmaops-health: {exc}")
        return 2
    state = noderun.load_state(cfg["state_file"])
    if args.ack_xids:
        if not cfg["state_file"]:
            _err("rdmaops-health: --ack-xids needs a state file")
            return 2
        new_state, count = noderun.ack_xids(state, cfg["sources"])
        noderun.save_state(cfg["state_file"], new_state)
        _out(f"acknowledged {count} Xid lines logged since boot")
        return 0
    report, new_state = noderun.run(
        cfg["node"],
        cfg["thresholds"],
        cfg["severity"],
        sysfs_root=cfg["sysfs_root"],
        checkpoint_dir=cfg["checkpoint_dir"],
        state=state,
        sources=cfg["sources"],
    )
    if cfg["state_file"]:
        try:
            noderun.save_state(cfg["state_file"], new_state)
        except OSError as exc:
            _err(f"rdmaops-health: cannot keep the counter baseline in {cfg['state_file']}: {exc}")
    if args.json:
        _out(json.dumps(report, indent=1, sort_keys=True))
    else:
        for finding in report["findings"]:
            _out(line(finding))
    fails = failed(report["findings"])
    if cfg["slurm"]:
        try:
            _out(apply_slurm(cfg["node"], fails))
        except (OSError, subprocess.TimeoutExpired) as exc:
            _err(f"rdmaops-health: {exc}")
            return 3
        return 0
    return 1 if fails else 0
