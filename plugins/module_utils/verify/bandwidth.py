# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pairwise bandwidth/latency measurement with perftest (RDMA) or iperf3 (TCP).

One side runs as server (a one-shot perftest server or `iperf3 -s -1`), the other as client.
Every child runs in its own process group and is killed with its group on timeout, on error and
when the caller is terminated, so no server is left listening.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.verify import iperf3, perftest

PERFTEST_TOOLS = {
    "write_bw": "ib_write_bw",
    "send_bw": "ib_send_bw",
    "read_bw": "ib_read_bw",
    "write_lat": "ib_write_lat",
    "send_lat": "ib_send_lat",
    "read_lat": "ib_read_lat",
}
# Output that means "nobody listens yet": the client retries until connect_timeout.
_NOT_LISTENING = ("Connection refused", "Couldn't connect to", "unable to connect to server")


class BandwidthError(Exception):
    """A parameter combination that cannot work, or a measurement that could not be made."""


def kind_of(mode: str, test: str) -> str:
    if mode == "tcp":
        return "bw"
    if test not in PERFTEST_TOOLS:
        raise BandwidthError(f"test must be one of {', '.join(PERFTEST_TOOLS)}, got {test!r}")
    return "lat" if test.endswith("_lat") else "bw"


def build_command(params: dict[str, Any], role: str) -> list[str]:
    """The argv of one side. Both sides must be built from the same size/duration/port parameters."""
    mode = params["mode"]
    if role not in ("server", "client"):
        raise BandwidthError(f"role must be server or client, got {role!r}")
    if role == "client" and not params.get("server"):
        raise BandwidthError("the client needs 'server' (the address of the peer running the server)")
    port = str(params["port"])
    if mode == "tcp":
        if role == "server":
            argv = ["iperf3", "-s", "-1", "-J", "-p", port]
        else:
            argv = ["iperf3", "-c", str(params["server"]), "-J", "-p", port, "-t", str(params["duration"])]
            argv += ["-P", str(params.get("parallel") or 1)]
            if params.get("size"):
                argv += ["-l", str(params["size"])]
        if params.get("bind_address"):
            argv += ["-B", str(params["bind_address"])]
        return argv
    if mode != "rdma":
        raise BandwidthError(f"mode must be rdma or tcp, got {mode!r}")
    kind = kind_of(mode, params["test"])
    if not params.get("device"):
        raise BandwidthError("RDMA mode needs a device (none given and none discovered)")
    argv = [
        PERFTEST_TOOLS[params["test"]],
        "-d",
        str(params["device"]),
        "-i",
        str(params.get("ib_port") or 1),
    ]
    argv += ["-p", port, "-F", "--report_gbits"]
    if params.get("gid_index") is not None:
        argv += ["-x", str(params["gid_index"])]
    if params.get("size"):
        argv += ["-s", str(params["size"])]
    if kind == "bw":
        argv += ["-D", str(params["duration"])]
        if params.get("parallel") and int(params["parallel"]) > 1:
            argv += ["-q", str(params["parallel"])]
    else:
        argv += ["-n", str(params.get("iterations") or 1000)]
    if role == "client":
        argv.append(str(params["server"]))
    return argv


def _kill_group(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is not None:
        return
    for sig, grace in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


class Runner:
    """Runs one child at a time in its own process group; kill() is safe from a signal handler."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[str] | None = None

    def kill(self) -> None:
        if self.proc is not None:
            _kill_group(self.proc)

    def run(self, argv: list[str], timeout: float) -> dict[str, Any]:
        started = time.monotonic()
        # subprocess, not run_command: its own process group, killed from a signal handler
        self.proc = subprocess.Popen(  # pylint: disable=ansible-bad-function
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )
        timed_out = False
        try:
            stdout, stderr = self.proc.communicate(timeout=max(timeout, 0.1))
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(self.proc)
            stdout, stderr = self.proc.communicate()
        finally:
            # Whatever happened (an exception included), the child and its group do not survive us.
            _kill_group(self.proc)
        return {
            "argv": argv,
            "rc": self.proc.returncode,
            "stdout": stdout,
            "stderr": stderr,
            "timed_out": timed_out,
            "elapsed_s": round(time.monotonic() - started, 3),
            "pid": self.proc.pid,
        }


def parse_output(mode: str, text: str) -> dict[str, Any]:
    return iperf3.parse(text) if mode == "tcp" else perftest.parse(text)


def measure(params: dict[str, Any], role: str, runner: Runner | None = None) -> dict[str, Any]:
    """Run one side. The client retries while the server is not listening yet, up to connect_timeout."""
    runner = runner or Runner()
    argv = build_command(params, role)
    deadline = time.monotonic() + float(params["timeout"])
    connect_deadline = time.monotonic() + float(params.get("connect_timeout") or 0)
    attempts = 0
    while True:
        attempts += 1
        run = runner.run(argv, deadline - time.monotonic())
        output = run["stdout"] + run["stderr"]
        retry = (
            role == "client"
            and not run["timed_out"]
            and any(marker in output for marker in _NOT_LISTENING)
            and time.monotonic() + 0.5 < min(connect_deadline, deadline)
        )
        if not retry:
            break
        time.sleep(0.5)
    run["attempts"] = attempts
    if run["timed_out"]:
        raise BandwidthError(
            f"{argv[0]} {role} did not finish within {params['timeout']} s and was killed"
            + (" (no client connected)" if role == "server" else "")
        )
    try:
        parsed = parse_output(params["mode"], run["stdout"] if params["mode"] == "tcp" else output)
    except ValueError as exc:
        raise BandwidthError(
            f"{argv[0]} {role} failed (rc {run['rc']}): {exc}; stderr: {run['stderr'].strip()}"
        ) from exc
    if parsed.get("error"):
        raise BandwidthError(f"{argv[0]} {role} failed (rc {run['rc']}): {parsed['error']}")
    # A perftest latency server prints no result table; only the client must have one.
    if run["rc"] != 0 or (role == "client" and not parsed.get("complete")):
        detail = "; ".join(parsed.get("errors") or []) or run["stderr"].strip() or "no result table"
        raise BandwidthError(f"{argv[0]} {role} failed (rc {run['rc']}): {detail}")
    run["parsed"] = parsed
    return run


def numbers(mode: str, parsed: dict[str, Any]) -> dict[str, Any]:
    """The figures thresholds use: gbps for bandwidth; latency_us (typical, i.e. median) for latency."""
    if mode == "tcp":
        return {"gbps": parsed.get("gbps"), "latency_us": None}
    summary = parsed.get("summary") or {}
    if parsed.get("kind") == "bw":
        return {"gbps": summary.get("bw_average_gbps"), "latency_us": None}
    return {"gbps": None, "latency_us": summary.get("t_typical_us")}


def evaluate(
    figures: dict[str, Any],
    *,
    label: str,
    line_rate_gbps: float | None,
    min_fraction_of_line_rate: float | None,
    min_gbps: float | None,
    max_latency_us: float | None,
) -> list[str]:
    """Every threshold the figures miss, each naming the pair, the number and the expected number."""
    failures: list[str] = []
    gbps = figures.get("gbps")
    if gbps is not None:
        if min_fraction_of_line_rate is not None:
            if not line_rate_gbps:
                failures.append(f"{label}: min_fraction_of_line_rate is set but the line rate is unknown")
            else:
                expected = min_fraction_of_line_rate * line_rate_gbps
                if gbps < expected:
                    failures.append(
                        f"{label}: {gbps:.2f} Gb/s measured, expected at least {expected:.2f} Gb/s"
                        f" ({min_fraction_of_line_rate:g} x line rate {line_rate_gbps:g} Gb/s)"
                    )
        if min_gbps is not None and gbps < min_gbps:
            failures.append(f"{label}: {gbps:.2f} Gb/s measured, expected at least {min_gbps:g} Gb/s")
    latency = figures.get("latency_us")
    if latency is not None and max_latency_us is not None and latency > max_latency_us:
        failures.append(f"{label}: {latency:.2f} us typical latency, expected at most {max_latency_us:g} us")
    return failures


def interface_speed_gbps(interface: str, sysfs_root: str = "/sys") -> float | None:
    """Link speed of a netdev from /sys/class/net/IF/speed (Mb/s); None when unknown (-1, absent)."""
    try:
        with open(os.path.join(sysfs_root, "class", "net", interface, "speed"), encoding="ascii") as handle:
            mbps = int(handle.read().strip())
    except (OSError, ValueError):
        return None
    return mbps / 1000 if mbps > 0 else None
