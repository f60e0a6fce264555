# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Thresholds, severities and the one shape every failing check reports.

A finding is a dict: node, check, subject (which GPU, port, path...), value, threshold, severity
("fail" stops a launch and drains a Slurm node, "warn" is reported only) and message. Thresholds are plain
data with the defaults below (docs/health.md has the table); ``severity`` maps a check name to "fail",
"warn" or "off" and replaces the check's default (for gpu.xid, gpu.dcgm_diag and rdma.counter, whose default
depends on the event, it replaces it for every event).
"""

from __future__ import annotations

from typing import Any

from ..values import is_int, is_number

FAIL = "fail"
WARN = "warn"
OFF = "off"
SEVERITIES = (FAIL, WARN, OFF)

# Every check, with its default severity. None: the severity comes from the event (Xid catalogue bucket,
# DCGM test status, the counter's row in rdma_counters).
CHECKS: dict[str, str | None] = {
    "gpu.tools": FAIL,
    "gpu.count": FAIL,
    "gpu.ecc_volatile": FAIL,
    "gpu.ecc_aggregate": WARN,
    "gpu.sram_threshold": FAIL,
    "gpu.remap_pending": FAIL,
    "gpu.remap_failure": FAIL,
    "gpu.retired_pages_pending": FAIL,
    "gpu.repair_pending": FAIL,
    "gpu.unrepairable_memory": FAIL,
    "gpu.recovery_action": FAIL,
    "gpu.clocks_event": FAIL,
    "gpu.persistence_mode": WARN,
    "gpu.pcie_width": FAIL,
    # GPUs lower their PCIe generation when idle to save power, so a lower gen alone is not a fault.
    "gpu.pcie_gen": WARN,
    "gpu.xid": None,
    "gpu.dcgm_diag": None,
    "rdma.port_state": FAIL,
    "rdma.rate": FAIL,
    "rdma.counter": None,
    "rdma.pfc_pause": WARN,
    "host.mem_available": FAIL,
    "host.disk_free": FAIL,
    "host.clock_sync": WARN,
    "cluster.driver_version": FAIL,
    "cluster.cuda_version": FAIL,
}

# Link-integrity counters (the link went down, or its error count passed LocalPhyErrors) fail; counters that
# also move with congestion or a single bad frame warn. max_growth: allowed growth between two checks.
DEFAULT_RDMA_COUNTERS: dict[str, dict[str, Any]] = {
    "link_downed": {"max_growth": 0, "severity": FAIL},
    "local_link_integrity_errors": {"max_growth": 0, "severity": FAIL},
    "excessive_buffer_overrun_errors": {"max_growth": 0, "severity": FAIL},
    "symbol_error": {"max_growth": 10, "severity": WARN},
    "link_error_recovery": {"max_growth": 0, "severity": WARN},
    "port_rcv_errors": {"max_growth": 0, "severity": WARN},
    "port_rcv_remote_physical_errors": {"max_growth": 0, "severity": WARN},
    "port_xmit_discards": {"max_growth": 100, "severity": WARN},
    # hw_counters (mlx5): RoCE retransmission timeouts, sequence errors, receive buffer exhaustion.
    "local_ack_timeout_err": {"max_growth": 0, "severity": WARN},
    "packet_seq_err": {"max_growth": 0, "severity": WARN},
    "out_of_buffer": {"max_growth": 0, "severity": WARN},
}

DEFAULTS: dict[str, Any] = {
    "gpu_count": 0,
    "gpu_ecc_volatile_max": 0,
    "gpu_ecc_aggregate_max": 0,
    "gpu_clocks_event_reasons": ["hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown"],
    "gpu_persistence_mode": True,
    "gpu_xid_ignore": [],
    "gpu_dcgm_level": 1,
    "gpu_dcgm_timeout_s": 300,
    "rdma_ports": "all",
    "rdma_rate_gbps": 0,
    "rdma_width": "",
    "rdma_counters": DEFAULT_RDMA_COUNTERS,
    "rdma_pfc_pause_per_s": 1000,
    "host_mem_available_min_pct": 5,
    "host_disk_free_min_gib": 20,
    "host_clock_max_offset_s": 0.1,
}

_NUMBER = (int, float)
_TYPES: dict[str, tuple[type, ...]] = {
    "gpu_count": (int,),
    "gpu_ecc_volatile_max": (int,),
    "gpu_ecc_aggregate_max": (int,),
    "gpu_clocks_event_reasons": (list,),
    "gpu_persistence_mode": (bool,),
    "gpu_xid_ignore": (list,),
    "gpu_dcgm_level": (int,),
    "gpu_dcgm_timeout_s": _NUMBER,
    "rdma_ports": (str, list),
    "rdma_rate_gbps": _NUMBER,
    "rdma_width": (str,),
    "rdma_counters": (dict,),
    "rdma_pfc_pause_per_s": _NUMBER,
    "host_mem_available_min_pct": _NUMBER,
    "host_disk_free_min_gib": _NUMBER,
    "host_clock_max_offset_s": _NUMBER,
}


def _type_error(key: str, value: Any) -> str | None:
    wanted = _TYPES[key]
    # bool is an int in Python; a threshold of True is a mistake, not 1.
    if isinstance(value, bool) and bool not in wanted:
        return f"{key}: {value!r} is a boolean, expected {' or '.join(t.__name__ for t in wanted)}"
    if not isinstance(value, wanted):
        names = " or ".join(t.__name__ for t in wanted)
        return f"{key}: {value!r} is a {type(value).__name__}, expected {names}"
    if is_number(value) and value < 0:
        return f"{key}: {value!r} is negative"
    return None


def _counter_errors(table: dict[str, Any]) -> list[str]:
    errors = []
    for name, row in table.items():
        if not isinstance(row, dict) or set(row) != {"max_growth", "severity"}:
            errors.append(f"rdma_counters.{name}: {row!r} must be a dict with max_growth and severity")
            continue
        growth = row["max_growth"]
        if not is_int(growth) or growth < 0:
            errors.append(f"rdma_counters.{name}.max_growth: {growth!r} must be a whole number >= 0")
        if row["severity"] not in SEVERITIES:
            errors.append(f"rdma_counters.{name}.severity: {row['severity']!r} must be one of {SEVERITIES}")
    return errors


def merge_thresholds(user: dict[str, Any] | None) -> tuple[dict[str, Any], list[str]]:
    """DEFAULTS overlaid with USER; every unknown key or wrong type is one error naming it."""
    merged = {k: (dict(v) if isinstance(v, dict) else v) for k, v in DEFAULTS.items()}
    errors: list[str] = []
    for key, value in (user or {}).items():
        if key not in DEFAULTS:
            errors.append(f"unknown threshold {key!r} (known: {', '.join(sorted(DEFAULTS))})")
            continue
        problem = _type_error(key, value)
        if problem:
            errors.append(problem)
            continue
        # Rows of rdma_counters replace or add to the default rows; severity "off" drops one.
        merged[key] = {**DEFAULT_RDMA_COUNTERS, **value} if key == "rdma_counters" else value
    if isinstance(merged["rdma_ports"], str) and merged["rdma_ports"] not in ("all", "none"):
        errors.append(
            f"rdma_ports: {merged['rdma_ports']!r} must be 'all', 'none' or a list of device[/port]"
        )
    if not 0 <= merged["gpu_dcgm_level"] <= 4:
        errors.append(f"gpu_dcgm_level: {merged['gpu_dcgm_level']!r} must be 0 (off) to 4")
    errors.extend(_counter_errors(merged["rdma_counters"]))
    return merged, errors


def severity_errors(overrides: dict[str, Any] | None) -> list[str]:
    errors = []
    for check, level in (overrides or {}).items():
        if check not in CHECKS:
            errors.append(f"severity: unknown check {check!r} (known: {', '.join(sorted(CHECKS))})")
        elif level not in SEVERITIES:
            errors.append(f"severity.{check}: {level!r} must be one of {', '.join(SEVERITIES)}")
    return errors


class Findings:
    """Collects the findings of one node, applying the severity overrides as they are added."""

    def __init__(self, node: str, overrides: dict[str, str] | None = None) -> None:
        self.node = node
        self.overrides = dict(overrides or {})
        self.items: list[dict[str, Any]] = []
        self.ran: dict[str, str] = {}

    def enabled(self, check: str) -> bool:
        return self.overrides.get(check) != OFF

    def mark(self, check: str, status: str) -> None:
        """Record that CHECK ran ("pass" unless a finding says otherwise) or why it was skipped."""
        if check not in self.ran or self.ran[check] == "pass":
            self.ran[check] = status

    def add(
        self,
        check: str,
        subject: str,
        value: Any,
        threshold: Any,
        message: str,
        severity: str | None = None,
    ) -> None:
        level = self.overrides.get(check) or severity or CHECKS[check]
        if level == OFF or level is None:
            return
        self.items.append(
            {
                "node": self.node,
                "check": check,
                "subject": subject,
                "value": value,
                "threshold": threshold,
                "severity": level,
                "message": message,
            }
        )
        if self.ran.get(check) != FAIL:
            self.ran[check] = level


def failed(findings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [f for f in findings if f["severity"] == FAIL]


def line(finding: dict[str, Any]) -> str:
    """One line naming node, check, subject, value, threshold and severity."""
    return (
        f"{finding['node']}: {finding['check']} [{finding['severity']}] {finding['subject']}: "
        f"{finding['message']} (value {finding['value']}, threshold {finding['threshold']})"
    )
