"""The train records: read one step late on a GPU (no drain of its queue at a log point), at once on a CPU,
timed over windows between the observed ends of log-point steps."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
import torch
from rdmaops_trainer import metrics
from rdmaops_trainer.metrics import DeferredScalars, MetricsLogger, TrainLog


class Recorder(MetricsLogger):
    def __init__(self) -> None:
        super().__init__(None, stream=None)
        self.records: list[dict[str, Any]] = []

    def log(self, event: str, **fields: Any) -> None:
        self.records.append({"event": event, **fields})


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class QueuedScalars:
    """Stands in for values still on a GPU: on_device, read() notes when it was called, and ``mark`` (the
    step's end on the GPU's timeline) is the clock when it was made."""

    reads: ClassVar[list[float]] = []
    clock: ClassVar[Clock]

    def __init__(self, **values: torch.Tensor) -> None:
        self.values = {k: float(v) for k, v in values.items()}
        self.mark = QueuedScalars.clock.now

    @property
    def on_device(self) -> bool:
        return True

    def read(self) -> dict[str, float]:
        QueuedScalars.reads.append(self.values["loss"])
        return self.values


@pytest.fixture()
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(metrics.time, "perf_counter", c)
    return c


def make_log(rec: Recorder, peak: float | None = None) -> TrainLog:
    return TrainLog(
        rec, torch.device("cpu"), tokens_per_step=1000, world_size=2, flops_per_token=6.0, peak=peak
    )


def test_cpu_values_are_copied_and_read_at_once() -> None:
    loss = torch.tensor(2.5)
    s = DeferredScalars(loss=loss, grad_norm=torch.tensor([0.75]))
    loss.add_(1.0)  # the next step updating a buffer in place must not change the logged value
    assert not s.on_device and s.mark is None
    assert s.read() == {"loss": 2.5, "grad_norm": 0.75}


def test_on_a_cpu_each_log_point_is_written_at_its_own_step(clock: Clock) -> None:
    rec = Recorder()
    log = make_log(rec, peak=1000.0)
    for step in range(1, 5):
        clock.now += 2.0  # each step takes 2 s
        log.step_done(step, 0.1 * step, torch.tensor(float(step)), torch.tensor(0.5), log=step % 2 == 0)
        assert [r["step"] for r in rec.records] == list(range(2, step + 1, 2))
    assert [r["loss"] for r in rec.records] == [2.0, 4.0]
    assert [r["lr"] for r in rec.records] == pytest.approx([0.2, 0.4])
    for r in rec.records:  # 2 steps of 1000 tokens in 4 s
        assert r["tokens_per_s"] == pytest.approx(500.0)
        assert r["tokens_per_s_per_gpu"] == pytest.approx(250.0)
        assert r["step_time_s"] == pytest.approx(2.0)
        assert r["mfu"] == pytest.approx(6.0 * 500.0 / (1000.0 * 2))
    assert log.last_loss == 4.0


def test_on_a_gpu_a_log_point_is_read_once_the_next_step_is_queued(
    clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(metrics, "DeferredScalars", QueuedScalars)
    QueuedScalars.reads.clear()
    QueuedScalars.clock = clock
    rec = Recorder()
    log = make_log(rec)
    assert log.last_loss is None
    # steps 1-2, log point 2, whose step ends at t = 106 on the GPU: nothing read yet (no wait at a log point)
    log.step_done(1, 0.1, torch.tensor(1.0), torch.tensor(0.5), log=False)
    clock.now = 106.0
    log.step_done(2, 0.1, torch.tensor(2.0), torch.tensor(0.5), log=True)
    assert rec.records == [] and QueuedScalars.reads == []
    # step 3 queued: step 2 is read now. The host reads late (t = 150, it waited inside step 3), but the
    # window ends where step 2 ended on the GPU
    clock.now = 150.0
    log.step_done(3, 0.1, torch.tensor(3.0), torch.tensor(0.5), log=False)
    assert [r["step"] for r in rec.records] == [2] and QueuedScalars.reads == [2.0]
    assert rec.records[0]["tokens_per_s"] == pytest.approx(2000 / 6.0)  # 2 steps in [100, 106]
    clock.now = 160.0
    log.step_done(4, 0.1, torch.tensor(4.0), torch.tensor(0.5), log=True)
    clock.now = 300.0
    # a flush (before evaluation, a checkpoint, the end) reads at once: steps 3-4 in [106, 160]
    log.flush()
    assert [r["step"] for r in rec.records] == [2, 4]
    assert rec.records[1]["step_time_s"] == pytest.approx(27.0)
    assert log.last_loss == 4.0
    log.flush()  # nothing pending: no record
    assert len(rec.records) == 2


def test_a_restart_times_only_the_steps_after_it(clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metrics, "DeferredScalars", QueuedScalars)
    QueuedScalars.clock = clock
    rec = Recorder()
    log = make_log(rec)
    log.step_done(1, 0.1, torch.tensor(1.0), torch.tensor(0.5), log=False)
    clock.now = 150.0  # an evaluation, not at a log point
    log.restart_window()
    clock.now = 154.0
    log.step_done(2, 0.1, torch.tensor(2.0), torch.tensor(0.5), log=True)
    log.flush()
    (r,) = rec.records
    assert r["step"] == 2 and r["step_time_s"] == pytest.approx(4.0)  # step 2 alone, from 150 to 154
