"""Forks the ranks of the unit suite's trainer launches from one interpreter that imported torch and the
trainer.

Every rank of a launch used to be a fresh ``python -m rdmaops_trainer``: about 5 s of imports (torch,
transformers, the trainer) per process, some 60 processes per suite on two shared cores. Here the imports are
done once; each rank is a fork of this process, which then only sets its environment and output files and
calls the CLI's ``main`` as ``python -m rdmaops_trainer`` does. This process imports and runs nothing else
(no thread is started by those imports, so forking it is safe), so every launch starts from the same state.
The torchrun path and the lab's launches (tests/train) still start fresh interpreters.

Protocol, one JSON line each way per launch: the request
``{"argv": [...], "ranks": [{"env": {...}, "out": path, "err": path}, ...], "timeout": seconds}``, the reply
``{"codes": [exit code per rank]}`` (negative: the signal). On a rank's failure, or at the timeout, the
other ranks are killed (they would wait in a collective), as a launcher does.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import sys
import time
import traceback
from typing import Any

from rdmaops_trainer.__main__ import main

# What every launch imports (module, then an attribute that transformers loads lazily); deepspeed is left out:
# the zero3 strategy sets DS_ACCELERATOR before its import.
PRELOAD = (
    ("torch", None),
    ("torch._dynamo", None),
    ("torch.distributed", None),
    ("transformers", "AutoModelForCausalLM"),
    ("rdmaops_trainer.train", None),
    ("rdmaops_trainer.models", None),
)


def preload() -> None:
    for name, attribute in PRELOAD:
        module = importlib.import_module(name)
        if attribute:
            getattr(module, attribute)


def _rank(argv: list[str], rank: dict[str, Any]) -> None:
    """In the forked child: become the rank and exit with the CLI's status, never returning."""
    code = 1
    try:
        os.environ.clear()
        os.environ.update(rank["env"])
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        for fd, path in ((1, rank["out"]), (2, rank["err"])):
            out = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(out, fd)
            os.close(out)
        code = main(argv)
    except SystemExit as exc:  # sys.exit(): None is success, a message is failure
        code = 0 if exc.code is None else exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        traceback.print_exc()
    finally:
        # as __main__ does: no interpreter finalization (gloo threads may still hold async work)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def launch(request: dict[str, Any]) -> list[int]:
    pids = []
    for rank in request["ranks"]:
        # the output files exist before the fork: a rank killed (another failed first) before its own open
        # still leaves them, empty, for the caller to read
        for path in (rank["out"], rank["err"]):
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644))
        pid = os.fork()
        if pid == 0:
            _rank(request["argv"], rank)
        pids.append(pid)
    codes: dict[int, int] = {}
    deadline = time.monotonic() + float(request["timeout"])
    while len(codes) < len(pids):
        for pid in pids:
            if pid not in codes:
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    codes[pid] = os.waitstatus_to_exitcode(status)
        if len(codes) < len(pids) and (any(codes.values()) or time.monotonic() > deadline):
            for pid in pids:
                if pid not in codes:
                    os.kill(pid, signal.SIGKILL)
                    codes[pid] = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        if len(codes) < len(pids):
            time.sleep(0.1)
    return [codes[pid] for pid in pids]


def serve() -> None:
    preload()
    print(json.dumps({"ready": os.getpid()}), flush=True)
    for line in sys.stdin:
        print(json.dumps({"codes": launch(json.loads(line))}), flush=True)


if __name__ == "__main__":
    serve()
