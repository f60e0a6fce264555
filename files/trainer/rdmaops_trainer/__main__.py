"""``python -m rdmaops_trainer --recipe NAME [--set key=value ...]`` (under torchrun for several processes).

Everything that can be checked without a process group is checked first: the recipe, the overrides, the
world size against the recipe, and every path (model, tokenizer, data). Errors exit with status 2 and a
message naming the bad key, value or path.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from . import dp_mesh
from .config import Recipe, RecipeError, available_recipes, check_paths, load_recipe, validate


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m rdmaops_trainer", description=__doc__.split("\n")[0])
    p.add_argument("--recipe", help=f"recipe name ({', '.join(available_recipes())}) or a .yaml path")
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a recipe value, e.g. --set train.lr=1e-4 --set strategy.name=fsdp2 (repeatable)",
    )
    p.add_argument("--check", action="store_true", help="validate recipe and paths, print it as JSON, exit")
    p.add_argument("--list", action="store_true", help="list the known recipes")
    return p.parse_args(argv)


def _env_rank() -> int:
    try:
        return int(os.environ.get("RANK", "0"))
    except ValueError:
        return 0


def completed_message(recipe: Recipe) -> str | None:
    """What to say instead of training when the output directory already holds the finished run."""
    if recipe.train.resume != "auto":
        return None
    from .checkpoint import completed_at, read_meta

    done = completed_at(recipe.output_dir, recipe.train.steps)
    if done is None:
        return None
    step = int(read_meta(done)["step"])
    return (
        f"python -m rdmaops_trainer: the run in {recipe.output_dir} is already complete at step {step} "
        f"({done.name}, train.steps={recipe.train.steps}); nothing to train. To train further raise "
        f"train.steps (--set train.steps={2 * step}); to start a new run use another directory "
        f"(--set train.output_dir={recipe.output_dir}-2) or start over here (--set train.resume=never)."
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.list:
        print("\n".join(available_recipes()))
        return 0
    if not args.recipe:
        print("python -m rdmaops_trainer: error: --recipe is required", file=sys.stderr)
        return 2
    try:
        recipe = load_recipe(args.recipe, args.overrides)
        from .runtime import env_world, resolve_runtime

        if args.check:  # on the controller: no world size and no GPU to compare with
            check_paths(recipe)
            print(json.dumps(recipe.to_dict(), indent=2))
            return 0
        rank, world, _ = env_world()
        local = os.environ.get("LOCAL_WORLD_SIZE", "")
        validate(recipe, world_size=world, local_world_size=int(local) if local.isdigit() else None)
        # the launcher's RDMAOPS_HSDP and node numbering, for FSDP2's mesh
        dp_mesh.plan(recipe, world, os.environ)
        check_paths(recipe)
        finished = completed_message(recipe)
        if finished:  # every rank leaves; one prints
            if rank == 0:
                print(finished)
            return 0
        rt = resolve_runtime(recipe)
    except RecipeError as exc:
        # every rank found the same error before any process group: one says it
        if _env_rank() == 0:
            print(f"python -m rdmaops_trainer: error: {exc}", file=sys.stderr)
        return 2
    from .runtime import init_distributed, shutdown_distributed
    from .train import run

    init_distributed(rt, recipe.train.expandable_segments)
    try:
        run(recipe, rt)
    finally:
        shutdown_distributed()
    return 0


if __name__ == "__main__":
    code = main()
    # A finished run leaves without interpreter finalization: gloo worker threads may still hold async work
    # (DeepSpeed ZeRO-3 prefetches) whose tensors, freed during finalization, abort the process with SIGABRT
    # ("terminate called without an active exception", pytorch/pytorch PR 179291; seen once on a CPU rank
    # after its last step). Metrics, checkpoints and plots are written and closed by now.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
