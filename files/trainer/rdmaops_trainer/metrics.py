"""Rank 0's logs: JSON lines (read by the launcher) + a readable line on stdout + a loss-curve PNG."""

from __future__ import annotations

import json
import math
import resource
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import torch

from .flops import mfu


def peak_memory_gb(device: torch.device) -> float:
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**30
    # CPU: the process's peak resident set (Linux reports KiB)
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def _fmt(value: Any) -> Any:
    # full precision: tests and tools compare losses across runs; only non-finite values need care in JSON
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return str(value)
    return value


class MetricsLogger:
    """Writes on rank 0 only; other ranks get a logger that does nothing."""

    def __init__(self, path: Path | None, stream: TextIO | None = sys.stdout) -> None:
        self.path = path
        self.stream = stream
        self.fh = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.fh = path.open("a", encoding="utf-8")

    @property
    def active(self) -> bool:
        return self.fh is not None

    def log(self, event: str, **fields: Any) -> None:
        if self.fh is None:
            return
        record = {"event": event, "time": round(time.time(), 3), **{k: _fmt(v) for k, v in fields.items()}}
        self.fh.write(json.dumps(record, sort_keys=False) + "\n")
        self.fh.flush()
        if self.stream is not None:
            self.stream.write(readable(record) + "\n")
            self.stream.flush()

    def close(self) -> None:
        if self.fh is not None:
            self.fh.close()
            self.fh = None


class DeferredScalars:
    """Scalars of a step, read on the host later without draining the GPU's queue.

    A CUDA tensor is copied into pinned host memory on the current stream, then a timing event is recorded
    (``mark``: where the step ends on the GPU's timeline); ``read`` waits for that event only. A tensor on
    the CPU is cloned (a later in-place update of the source does not reach the read value); ``mark`` is then
    None.
    """

    def __init__(self, **values: torch.Tensor) -> None:
        self._host: dict[str, torch.Tensor] = {}
        self.mark: torch.cuda.Event | None = None
        for name, value in values.items():
            v = value.detach().reshape(())
            if v.is_cuda:
                host = torch.empty((), dtype=v.dtype, pin_memory=True)
                host.copy_(v, non_blocking=True)
                self._host[name] = host
                if self.mark is None:
                    self.mark = torch.cuda.Event(enable_timing=True)
            else:
                self._host[name] = v.clone()
        if self.mark is not None:
            self.mark.record()

    @property
    def on_device(self) -> bool:
        """Some value is still on its way from the GPU (read() waits for it)."""
        return self.mark is not None

    def read(self) -> dict[str, float]:
        if self.mark is not None:
            self.mark.synchronize()
        return {name: float(v) for name, v in self._host.items()}


Mark = float | torch.cuda.Event  # a window's end: host seconds (CPU) or an event on the GPU's timeline


def seconds_between(start: Mark, end: Mark) -> float:
    if isinstance(start, float) and isinstance(end, float):
        return end - start
    assert isinstance(start, torch.cuda.Event) and isinstance(end, torch.cuda.Event)
    return start.elapsed_time(end) / 1000.0


@dataclass
class _LogPoint:
    step: int
    lr: float
    steps: int  # optimizer steps in its timing window
    scalars: DeferredScalars


class TrainLog:
    """The ``train`` records: loss, gradient norm, throughput and MFU at the log points.

    On a GPU a log point's numbers are read one step late: after the next step's work is queued, so the GPU
    does not sit idle while the host reads a loss, logs and launches the next step's first kernels.
    ``flush`` reads at once; the loop calls it before anything that needs the numbers or synchronises anyway
    (evaluation, a checkpoint, the last step).
    A window's time runs between the ends of two log points' steps on the GPU's own timeline (timing events),
    so neither the late read nor a host that waits inside a step moves it; on a CPU it is host time.
    """

    def __init__(
        self,
        logger: MetricsLogger,
        device: torch.device,
        tokens_per_step: int,
        world_size: int,
        flops_per_token: float,
        peak: float | None,
    ) -> None:
        self.logger = logger
        self.device = device
        self.tokens_per_step = tokens_per_step
        self.world_size = world_size
        self.flops_per_token = flops_per_token
        self.peak = peak
        self.last_loss: float | None = None  # None until a log point was read: never a made-up nan
        self._pending: _LogPoint | None = None
        self._start: Mark = self._mark_now()
        self._window_steps = 0

    def _mark_now(self) -> Mark:
        if self.device.type != "cuda":
            return time.perf_counter()
        event = torch.cuda.Event(enable_timing=True)
        event.record()
        return event

    def step_done(self, step: int, lr: float, loss: torch.Tensor, grad_norm: torch.Tensor, log: bool) -> None:
        """Optimizer step ``step`` (1-based) was queued; ``log``: it is a log point."""
        self.flush()  # the previous log point: its step is done, or nearly, while this one is queued
        self._window_steps += 1
        if log:
            scalars = DeferredScalars(loss=loss, grad_norm=grad_norm)
            self._pending = _LogPoint(step, lr, self._window_steps, scalars)
            self._window_steps = 0
            if not scalars.on_device:
                # CPU: the step has run by now and there is no queue to keep busy; read at once, or the
                # window would end after the next step's compute
                self.flush()

    def flush(self) -> None:
        point, self._pending = self._pending, None
        if point is None:
            return
        values = point.scalars.read()
        # values already on the host (a CPU run; or a strategy that returns them there): the window ends now
        end: Mark = point.scalars.mark if point.scalars.mark is not None else self._mark_now()
        if isinstance(end, torch.cuda.Event):
            end.synchronize()
        elapsed = max(seconds_between(self._start, end), 1e-9)
        self._start = end
        self.last_loss = values["loss"]
        tps = self.tokens_per_step * point.steps / elapsed
        self.logger.log(
            "train",
            step=point.step,
            loss=values["loss"],
            lr=point.lr,
            grad_norm=values["grad_norm"],
            tokens_per_s=tps,
            tokens_per_s_per_gpu=tps / self.world_size,
            mfu=mfu(tps, self.flops_per_token, self.peak, self.world_size) if self.peak else None,
            peak_mem_gb=peak_memory_gb(self.device),
            step_time_s=elapsed / point.steps,
        )

    def restart_window(self) -> None:
        """After work that is not training (evaluation, a checkpoint): time the next window from here, over
        the steps that follow only."""
        self.flush()
        self._start = self._mark_now()
        self._window_steps = 0


def readable(rec: dict[str, Any]) -> str:
    ev = rec.get("event")
    if ev == "train":
        parts = [
            f"step {rec['step']:>6}",
            f"loss {rec['loss']:.4f}",
            f"lr {rec['lr']:.3e}",
            f"gnorm {rec['grad_norm']:.3f}",
            f"{rec['tokens_per_s']:,.0f} tok/s",
            f"({rec['tokens_per_s_per_gpu']:,.0f}/rank)",
        ]
        if rec.get("mfu") is not None:
            parts.append(f"mfu {100 * rec['mfu']:.1f}%")
        parts.append(f"mem {rec['peak_mem_gb']:.2f} GiB")
        return " | ".join(parts)
    if ev == "eval":
        return f"step {rec['step']:>6} | eval loss {rec['eval_loss']:.4f}"
    # a value that was not computed (None, "") or an empty list is left out rather than printed as None or []
    rest = ", ".join(
        f"{k}={v}" for k, v in rec.items() if k not in ("event", "time") and v not in (None, "", [])
    )
    return f"[{ev}] {rest}"


def read_metrics(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def plot_loss(metrics_path: Path, png_path: Path, title: str) -> Path | None:
    """Loss curve from the JSON lines (the last record per step wins, so resumed runs plot once)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # plotting is optional on the nodes
        return None
    train: dict[int, float] = {}
    evals: dict[int, float] = {}
    for rec in read_metrics(metrics_path):
        if rec.get("event") == "train":
            train[int(rec["step"])] = float(rec["loss"])
        elif rec.get("event") == "eval":
            evals[int(rec["step"])] = float(rec["eval_loss"])
    if not train:
        return None
    fig, ax = plt.subplots(figsize=(7, 4))
    steps = sorted(train)
    ax.plot(steps, [train[s] for s in steps], label="train loss")
    if evals:
        es = sorted(evals)
        ax.plot(es, [evals[s] for s in es], "o-", label="eval loss")
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(png_path, dpi=100)
    plt.close(fig)
    return png_path
