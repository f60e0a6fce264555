# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Training recipes for playbooks, read and checked by the trainer's own code.

The recipe files and their checks live in the trainer package (files/trainer/rdmaops_trainer); this reads them
through that package's config, layout, fit and dp_mesh modules (PyYAML only, no torch), so a playbook and the
trainer can never disagree on what a recipe means, on how it fits the cluster and its batch is split over the
ranks, or on whether FSDP2 runs hybrid (HSDP) and in which dtype its gradients cross the nodes.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from collections.abc import Mapping
from typing import Any


class RecipeResolveError(Exception):
    """A recipe, an override or the inventory does not fit; the message names the bad key and value."""


def override_args(overrides: dict[str, Any]) -> list[str]:
    """Dotted keys and values (as from ``-e``) -> the trainer's ``--set key=value`` arguments.

    A string is passed as written, so the trainer parses it as YAML exactly like its own ``--set``
    (``-e recipe_overrides='train.lr=1e-4'`` gives a number); any other value is written as JSON, which is
    YAML too, so numbers, booleans, null, lists and mappings from a JSON ``-e`` keep their types.
    """
    args = []
    for key, value in overrides.items():
        if not isinstance(key, str) or not key or "=" in key:
            raise RecipeResolveError(f"override key {key!r}: expected a dotted recipe key such as train.lr")
        args.append(f"{key}={value if isinstance(value, str) else json.dumps(value)}")
    return args


def trainer_module(trainer_src: str, name: str) -> Any:
    """``rdmaops_trainer.<name>`` from ``trainer_src`` (config and layout: PyYAML only, no torch)."""
    package = os.path.join(trainer_src, "rdmaops_trainer")
    # checked here, not left to the import: an rdmaops_trainer installed elsewhere (a venv's) would be
    # imported instead and answer for a source it is not
    if not os.path.isfile(os.path.join(package, "__init__.py")):
        raise RecipeResolveError(f"trainer_src {trainer_src}: no rdmaops_trainer package there")
    if trainer_src not in sys.path:
        sys.path.insert(0, trainer_src)
    try:
        module = importlib.import_module(f"rdmaops_trainer.{name}")
    except ImportError as exc:
        raise RecipeResolveError(
            f"trainer_src {trainer_src}: cannot import rdmaops_trainer.{name} ({exc})"
        ) from exc
    found = os.path.realpath(str(getattr(module, "__file__", "")))
    if not found.startswith(os.path.realpath(package) + os.sep):
        raise RecipeResolveError(
            f"trainer_src {trainer_src}: rdmaops_trainer.{name} was imported from {found}, not from there"
        )
    return module


def overrides_form(sets: Mapping[str, Any]) -> str:
    """Recipe keys as train.yml takes them: ``-e '{"recipe_overrides": {...}}'``."""
    return f"-e '{json.dumps({'recipe_overrides': dict(sets)})}'"


def overrides_hint(fits: list[dict[str, Any]]) -> str:
    """Settings that would run, as train.yml takes them, or ''."""
    return "; it would run with " + " or ".join(map(overrides_form, fits)) if fits else ""


def resolve(
    trainer_src: str,
    recipe: str,
    overrides: dict[str, Any],
    nodes: int | None = None,
    procs_per_node: int | None = None,
    check_paths: bool = False,
) -> dict[str, Any]:
    """Load, override and check a recipe; with ``nodes``, fit it to that cluster; return it with the facts a
    launcher needs.

    ``nodes``: the hosts the job will run on; ``procs_per_node``: the processes each starts (None: the
    recipe's own; train.yml gives GPU recipes their nodes' GPUs). The trainer's fit (``rdmaops_trainer.fit``)
    sets ``cluster.nodes`` and ``cluster.procs_per_node`` and keeps the global batch, or moves it and says why
    (``fit.notes``); a key in ``cluster.pinned`` or in ``overrides`` stays as written, and a cluster it does
    not fit is refused with the overrides that would run.
    ``check_paths``: also require the model, tokenizer and data paths to exist where this runs.
    """
    config = trainer_module(trainer_src, "config")
    layouts = trainer_module(trainer_src, "layout")
    fitting = trainer_module(trainer_src, "fit")
    args = override_args(overrides)
    found: Any = None
    try:
        # checked on its own cluster only when it stays there; fitted, it is checked on the cluster it runs on
        rec = config.load_recipe(recipe, args, cluster=nodes is None)
        if nodes is not None:
            found = fitting.fit(rec, nodes, procs_per_node, fitting.pins(rec, overrides, "recipe_overrides"))
            args += override_args(found.sets)
            # the trainer's own checks on the fitted recipe, as the nodes will load it
            rec = config.load_recipe(recipe, args)
        if check_paths:
            config.check_paths(rec)
        # the batch split over the recipe's cluster, as the trainer will compute it on WORLD_SIZE ranks
        layout = layouts.BatchLayout.from_recipe(rec)
    except fitting.FitError as exc:
        raise RecipeResolveError(f"recipe {recipe}: {exc}{overrides_hint(exc.fits)}") from exc
    except config.RecipeError as exc:
        raise RecipeResolveError(f"recipe {recipe}: {exc}") from exc
    return {
        "recipe": rec.to_dict(),
        # every --set that gives the trainer this recipe: the overrides, then what the fit changed
        "overrides": args,
        "layout": layout.to_dict(),
        "fit": {
            "sets": dict(found.sets) if found else {},
            "notes": [*found.notes, fitting.describe(found.layout)] if found else [],
            # the keys the fit kept as written: the recipe's cluster.pinned and the overrides' own
            "pinned": sorted(fitting.pins(rec, overrides)),
        },
        "launch": {
            "name": rec.name,
            "strategy": rec.strategy.name,
            "device": rec.cluster.device,
            "nodes": rec.cluster.nodes,
            "procs_per_node": rec.cluster.procs_per_node,
            "world_size": layout.world_size,
            "data_parallel": layout.dp_size,
            "global_batch_size": layout.global_batch_size,
            # the recipe's value; a pipeline schedule cuts micro-batches of its own (layout.micro_batch_size)
            "micro_batch_size": rec.train.micro_batch_size,
            # null for the pipeline, whose schedule's micro-batches (layout.grad_accum) replace accumulation
            "grad_accum": None if layout.pipelined else layout.grad_accum,
            "steps": rec.train.steps,
            "output_dir": str(rec.output_dir),
        },
    }


def hsdp_decision(trainer_src: str, recipe: Mapping[str, Any], slow_fabric: bool) -> dict[str, Any]:
    """The trainer's own HSDP decision for RECIPE (a resolved recipe, as ``resolve`` returns it) under the
    launcher variable a launch sets (1 where the nodes are joined by a slow fabric, else 0): its name, its
    value, whether the mesh is hybrid and why, and the gradients' reduction dtype and why. The compute
    precision is the trainer's too, for a GPU unless the recipe's device is cpu."""
    config = trainer_module(trainer_src, "config")
    dp_mesh = trainer_module(trainer_src, "dp_mesh")
    try:
        rec = config.recipe_from_dict(json.loads(json.dumps(dict(recipe))))
        env = {dp_mesh.HSDP_ENV: "1" if slow_fabric else "0"}
        mesh = dp_mesh.plan(rec, rec.cluster.world_size, env)
        fp32 = config.compute_precision(rec, rec.cluster.device != "cpu") == "fp32"
        dtype, dtype_why = dp_mesh.reduce_dtype(rec, mesh, fp32)
    except config.RecipeError as exc:
        raise RecipeResolveError(f"recipe {recipe.get('name')}: {exc}") from exc
    return {
        "env": env,
        "hybrid": mesh.hybrid,
        "why": mesh.why,
        "reduce_dtype": dtype,
        "reduce_why": dtype_why,
    }
