# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""train.yml's memory check: the trainer's estimate of the layout's peak per GPU (``rdmaops_trainer.memory``,
from the model's config) against the smallest GPU memory the nodes report. A layout that cannot fit is refused
with the estimate and the smallest layouts that would (``train_memory_check``: fail refuses, warn only notes,
off does not estimate).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.train.recipe import (
    RecipeResolveError,
    overrides_form,
    trainer_module,
)

MODES = ("fail", "warn", "off")
GIB = 2**30


def memory_check(
    trainer_src: str,
    recipe: Mapping[str, Any],
    model_config: Mapping[str, Any] | None,
    hybrid: bool,
    gpu: tuple[int, str] | None,
    mode: str,
) -> dict[str, list[str]]:
    """``{"errors", "notes"}`` for RECIPE (resolved and fitted) on GPUs of GPU = (MiB, the node that has the
    least); MODEL_CONFIG: an hf model's config.json as the master read it (None for the others); HYBRID:
    FSDP2 runs HSDP."""
    out: dict[str, list[str]] = {"errors": [], "notes": []}
    if mode == "off":
        return out
    config = trainer_module(trainer_src, "config")
    memory = trainer_module(trainer_src, "memory")
    shapes = trainer_module(trainer_src, "model_shape")
    try:
        rec = config.recipe_from_dict(json.loads(json.dumps(dict(recipe))))
        shape = shapes.model_shape(rec, model_config)
    except shapes.ShapeUnknown as exc:
        out["notes"].append(f"memory: not estimated ({exc})")
        return out
    except config.RecipeError as exc:
        raise RecipeResolveError(f"recipe {recipe.get('name')}: {exc}") from exc
    est = memory.recipe_estimate(rec, model_config, hybrid)
    c = rec.cluster
    where = f"{c.nodes} node(s) x {c.procs_per_node} GPUs"
    if gpu is None:
        out["notes"].append(
            f"memory: about {est.describe()} per GPU on {where}; no node reported its GPUs' memory"
        )
        return out
    mib, host = gpu
    usable = memory.usable_bytes(mib)
    of = f"{usable / GIB:.1f} GiB usable of the {mib} MiB of {host}'s GPUs"
    if est.total <= usable:
        out["notes"].append(f"memory: about {est.describe()} per GPU on {where}, of {of}")
        return out
    options = memory.fitting_options(rec, shape, c.procs_per_node, usable, hybrid)
    text = f"memory: {rec.name} on {where} needs about {est.describe()} per GPU, more than the {of}"
    if options:
        text += "; it would fit " + " or ".join(_option(o, c.nodes, c.procs_per_node) for o in options)
    else:
        text += "; no layout up to 64 nodes of these GPUs fits (offload, or GPUs with more memory)"
    if mode == "fail":
        out["errors"].append(
            text + " (-e train_memory_check=warn launches anyway: the estimate is within about 15%)"
        )
    else:
        out["notes"].append(text)
    return out


def _option(option: Any, nodes: int, procs: int) -> str:
    """A layout that fits, in words: on more nodes (train.yml fits the batch to them itself), or here with the
    overrides it needs."""
    about = f"(about {option.estimate.gib:.1f} GiB)"
    if option.nodes != nodes:
        # the batch keys follow from the node count; what else the option changes is an override
        extra = {k: v for k, v in option.sets.items() if not k.startswith("cluster.") and k not in FITTED}
        return (
            f"on {option.nodes} nodes of {procs} GPUs"
            + (f" with {overrides_form(extra)}" if extra else "")
            + f" {about}"
        )
    return f"here with {overrides_form(option.sets)} {about}"


FITTED = ("train.global_batch_size", "train.micro_batch_size")
