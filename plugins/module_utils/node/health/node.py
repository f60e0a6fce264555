# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run every check on this node: read the tools' output (or, for tests and the lab, files standing in for
them), evaluate, and keep the small state file that makes "grew since the last check" possible.

The state file holds the last counter snapshot with its time and the kernel's boot id (a reboot resets the
counters, so an older snapshot is no baseline), and the Xid acknowledgement: Xid lines up to a kernel time
that an operator marked as dealt with (after a GPU reset) with ``rdmaops-health --ack-xids``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from typing import Any

from ..rdma import sysfs
from . import gpu, host, rdma, xid
from .findings import Findings, failed

STATE_VERSION = 1

# Keys of SOURCES: a file that stands in for the command or file named here.
SOURCE_KEYS = ("nvidia_smi", "kernel_log", "dcgmi", "chronyc", "timedatectl", "meminfo", "boot_id", "ethtool")


class Sources:
    """The node's tools and files, each replaceable by a file (SOURCES[key], ethtool as 'ethtool:NETDEV')."""

    def __init__(self, overrides: dict[str, str] | None = None, timeout_s: float = 60) -> None:
        self.overrides = dict(overrides or {})
        self.timeout_s = timeout_s

    def _file(self, key: str) -> str | None:
        path = self.overrides.get(key)
        if path is None:
            return None
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()

    def has(self, key: str, tool: str) -> bool:
        return key in self.overrides or shutil.which(tool) is not None

    def command(self, key: str, argv: list[str], timeout_s: float | None = None) -> tuple[str | None, str]:
        """(stdout, error): stdout None with an error when the tool is absent or failed without output."""
        if key in self.overrides:
            return self._file(key), ""
        if shutil.which(argv[0]) is None:
            return None, f"{argv[0]} not found"
        try:
            # subprocess, not run_command: the node-side CLI runs this too; run_command has no timeout
            proc = subprocess.run(  # pylint: disable=ansible-bad-function
                argv, capture_output=True, text=True, timeout=timeout_s or self.timeout_s, check=False
            )
        except subprocess.TimeoutExpired:
            return None, f"{' '.join(argv)} timed out after {timeout_s or self.timeout_s:g} s"
        except OSError as exc:
            return None, f"{' '.join(argv)}: {exc}"
        if proc.returncode != 0 and not proc.stdout.strip():
            return None, f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr.strip()[:300]}"
        return proc.stdout, ""

    def read(self, key: str, path: str) -> str | None:
        if key in self.overrides:
            return self._file(key)
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                return handle.read()
        except OSError:
            return None

    def kernel_log(self) -> tuple[str | None, str]:
        """The kernel log since boot, with seconds since boot on every line."""
        if "kernel_log" in self.overrides:
            return self._file("kernel_log"), ""
        text, err = self.command(
            "kernel_log", ["journalctl", "-k", "-b", "0", "-o", "short-monotonic", "--no-pager"]
        )
        if text is not None and text.strip() in ("", "-- No entries --"):
            # journald without the kernel's messages (a container, no kmsg access): ask the kernel itself.
            text, err = None, "journalctl -k has no entries"
        if text is None:
            # dmesg's ring buffer can have wrapped on a long-running node; journald keeps the whole boot.
            text, err2 = self.command("kernel_log", ["dmesg"])
            err = f"{err}; {err2}" if text is None else ""
        return text, err


def load_state(path: str | None) -> dict[str, Any]:
    if not path:
        return {}
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) and data.get("version") == STATE_VERSION else {}


def save_state(path: str, state: dict[str, Any]) -> None:
    """Write atomically: the module and the Slurm HealthCheckProgram may both update it."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, mode=0o755, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".health-state.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(state, handle, indent=1, sort_keys=True)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _gpu_checks(
    src: Sources, thresholds: dict[str, Any], state: dict[str, Any], boot_id: str, out: Findings
) -> dict[str, Any]:
    facts: dict[str, Any] = {"driver_version": None, "cuda_version": None, "gpu_count": 0, "gpus": []}
    text, err = src.command("nvidia_smi", ["nvidia-smi", "-q", "-x"])
    if text is None:
        want = thresholds["gpu_count"]
        if want:
            out.add("gpu.tools", "nvidia-smi", err, f"{want} GPUs", f"GPU checks cannot run: {err}")
        else:
            for check in ("gpu.count", "gpu.xid", "gpu.dcgm_diag"):
                out.mark(check, f"skipped: {err}")
        return facts
    try:
        smi = gpu.parse_smi_xml(text)
    except gpu.GpuParseError as exc:
        out.add("gpu.tools", "nvidia-smi", "unparsable", "nvidia_smi_log XML", str(exc))
        return facts
    out.mark("gpu.tools", "pass")
    facts.update(
        driver_version=smi["driver_version"],
        cuda_version=smi["cuda_version"],
        gpu_count=len(smi["gpus"]),
        gpus=[{k: g[k] for k in ("index", "pci", "name", "uuid")} for g in smi["gpus"]],
    )
    gpu.check_smi(smi, thresholds, out)

    if out.enabled("gpu.xid"):
        log, err = src.kernel_log()
        if log is None:
            out.mark("gpu.xid", f"skipped: {err}")
        else:
            events = xid.parse_kernel_log(log)
            ack = state.get("xid_ack") or {}
            if ack.get("boot_id") == boot_id:
                events = [e for e in events if e["ts"] is None or e["ts"] > ack.get("after", -1)]
            gpu.check_xids(events, thresholds, out)

    level = thresholds["gpu_dcgm_level"]
    if not level:
        out.mark("gpu.dcgm_diag", "skipped: gpu_dcgm_level is 0")
    elif not out.enabled("gpu.dcgm_diag"):
        pass
    elif not src.has("dcgmi", "dcgmi"):
        out.mark("gpu.dcgm_diag", "skipped: dcgmi not installed")
    else:
        diag_text, err = src.command(
            "dcgmi", ["dcgmi", "diag", "-r", str(level), "-j"], timeout_s=thresholds["gpu_dcgm_timeout_s"]
        )
        try:
            if diag_text is None:
                raise gpu.GpuParseError(err)
            diag = gpu.parse_dcgm(diag_text)
            facts["dcgm_version"] = diag["version"]
            gpu.check_dcgm(diag, level, out)
        except gpu.GpuParseError as exc:
            out.add(
                "gpu.dcgm_diag", "dcgmi diag", "no result", f"-r {level} passes", str(exc), severity="warn"
            )
    return facts


def run(
    node: str,
    thresholds: dict[str, Any],
    severity: dict[str, str] | None = None,
    *,
    sysfs_root: str = "/sys",
    checkpoint_dir: str | None = None,
    state: dict[str, Any] | None = None,
    sources: dict[str, str] | None = None,
    now: float | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """All checks on this node -> (report, new state); THRESHOLDS come from findings.merge_thresholds."""
    now = time.time() if now is None else now
    state = dict(state or {})
    src = Sources(sources, timeout_s=60)
    out = Findings(node, severity)
    boot_id = (src.read("boot_id", "/proc/sys/kernel/random/boot_id") or "").strip()
    same_boot = bool(boot_id) and state.get("boot_id") == boot_id

    facts = _gpu_checks(src, thresholds, state, boot_id, out)

    ports = sysfs.read_ports(sysfs_root)
    facts["rdma_ports"] = [
        {k: p[k] for k in ("name", "state", "phys_state", "rate", "link_layer", "netdev")} for p in ports
    ]
    chosen = rdma.check_ports(ports, thresholds, out)
    counters = {p["name"]: rdma.read_counters(sysfs_root, p) for p in chosen}
    rdma.check_counters(counters, state.get("counters") if same_boot else None, thresholds, out)
    pause: dict[str, dict[str, int]] = {}
    for netdev in sorted({p["netdev"] for p in chosen if p["netdev"] and p["link_layer"] == "Ethernet"}):
        key = f"ethtool:{netdev}"
        if key in src.overrides or shutil.which("ethtool"):
            text, _err = src.command(key, ["ethtool", "-S", netdev])
            values = rdma.parse_ethtool_pause(text or "")
            if values:
                pause[netdev] = values
    elapsed = now - state["time"] if same_boot and isinstance(state.get("time"), (int, float)) else None
    rdma.check_pause(pause, state.get("pause") if same_boot else None, elapsed, thresholds, out)

    meminfo = src.read("meminfo", "/proc/meminfo")
    host.check_memory(host.parse_meminfo(meminfo or ""), thresholds, out)
    free = host.free_bytes(checkpoint_dir) if checkpoint_dir else None
    host.check_disk(checkpoint_dir, free, thresholds, out)
    if out.enabled("host.clock_sync"):
        chrony, _chrony_err = (
            src.command("chronyc", ["chronyc", "-n", "tracking"])
            if src.has("chronyc", "chronyc")
            else (None, "")
        )
        timedatectl = None
        if chrony is None and src.has("timedatectl", "timedatectl"):
            timedatectl, _tdc_err = src.command("timedatectl", ["timedatectl", "show"])
        host.check_clock(chrony, timedatectl, thresholds, out)

    for check in list(out.ran):
        if not out.enabled(check):
            out.ran[check] = "skipped: severity off"
    findings = out.items
    old_ack = state.get("xid_ack") or {}
    report = {
        "node": node,
        "time": now,
        "ok": not failed(findings),
        "findings": findings,
        "checks": dict(sorted(out.ran.items())),
        "facts": facts,
    }
    new_state = {
        "version": STATE_VERSION,
        "boot_id": boot_id,
        "time": now,
        "counters": counters,
        "pause": pause,
        "xid_ack": old_ack if old_ack.get("boot_id") == boot_id else None,
    }
    return report, new_state


def ack_xids(state: dict[str, Any], sources: dict[str, str] | None = None) -> tuple[dict[str, Any], int]:
    """Mark every Xid logged so far in this boot as dealt with; returns (new state, how many were marked)."""
    src = Sources(sources)
    boot_id = (src.read("boot_id", "/proc/sys/kernel/random/boot_id") or "").strip()
    log, err = src.kernel_log()
    if log is None:
        raise OSError(f"cannot read the kernel log: {err}")
    events = [e for e in xid.parse_kernel_log(log) if e["ts"] is not None]
    new = dict(state)
    new.setdefault("version", STATE_VERSION)
    new["xid_ack"] = {"boot_id": boot_id, "after": max((e["ts"] for e in events), default=0.0)}
    return new, len(events)
