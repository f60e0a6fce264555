"""A test hook: every rank stops itself (SIGSTOP) at a named point of the run.

Some faults matter only at a moment that lasts milliseconds: between the last logged step and the end
record, or right after a checkpoint. A test that watches for that moment from outside and then acts races
the trainer. With ``RDMAOPS_TRAINER_PAUSE`` set, each rank sends itself SIGSTOP at that point and stays
there until it gets SIGCONT (or is killed), so the test acts in that moment by construction. Unset or empty
(the default), nothing happens.

Values: ``start`` (after the start record, before the first step), ``checkpoint@N`` (right after the
checkpoint of step N is saved and logged) and ``end`` (after the last step, its checkpoint and export;
before the end record), or several, comma-separated (``checkpoint@10,end``: held at each in turn).
train.yml's watch sees held ranks as stopped (state T): a test that holds a job sets
``train_stopped_timeout`` above the time it holds it.
"""

from __future__ import annotations

import os
import re
import signal
from collections.abc import Mapping

from .errors import RecipeError

PAUSE_ENV = "RDMAOPS_TRAINER_PAUSE"
_POINT = re.compile(r"start|end|checkpoint@[1-9][0-9]*")


def pause_point(environ: Mapping[str, str]) -> str | None:
    """The point ``RDMAOPS_TRAINER_PAUSE`` names (None when unset); a bad value is refused before training."""
    raw = environ.get(PAUSE_ENV, "")
    if not raw:
        return None
    if not all(_POINT.fullmatch(part) for part in raw.split(",")):
        raise RecipeError(
            f"environment variable {PAUSE_ENV}={raw!r}: use start, checkpoint@STEP or end, or several "
            "comma-separated (a test hook, docs/trainer.md)"
        )
    return raw


def pause_at(point: str | None, here: str) -> None:
    """Stop this process if the hook names ``here``; it goes on when it gets SIGCONT."""
    if point is not None and here in point.split(","):
        os.kill(os.getpid(), signal.SIGSTOP)
