"""Print the facts of a Python environment as JSON (run with the venv's interpreter)."""

from __future__ import annotations

import importlib.metadata
import json
import sys


def version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def main() -> None:
    major, minor, micro = sys.version_info[:3]
    facts: dict[str, object] = {"python": f"{major}.{minor}.{micro}", "venv": sys.prefix}
    import torch

    facts["torch"] = torch.__version__
    facts["cuda"] = torch.version.cuda
    available = torch.cuda.is_available()
    facts["gpu_count"] = torch.cuda.device_count() if available else 0
    nccl = None
    if torch.version.cuda and torch.distributed.is_nccl_available():
        raw = torch.cuda.nccl.version()
        nccl = ".".join(map(str, raw)) if isinstance(raw, tuple) else str(raw)
    facts["nccl"] = nccl
    # versions from the metadata: importing deepspeed would pick an accelerator and probe ops
    for dist in (
        "deepspeed",
        "transformers",
        "peft",
        "accelerate",
        "datasets",
        "safetensors",
        "rdmaops-trainer",
    ):
        facts[dist.replace("-", "_")] = version(dist)
    print(json.dumps(facts, sort_keys=True))


if __name__ == "__main__":
    main()
