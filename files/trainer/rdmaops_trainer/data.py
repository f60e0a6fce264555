"""Data: JSONL (text or chat) or the generated corpus -> tokens -> packed fixed-length blocks.

The order is a pure function of (seed, step): step ``s`` takes global positions ``s*G .. s*G+G-1`` of an
endless sequence of per-epoch permutations, so a resumed run (on any world size) sees exactly the batches the
uninterrupted run would have seen. Each data-parallel rank takes a contiguous slice of the step's G blocks.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .config import Recipe, RecipeError
from .layout import BatchLayout
from .tokenizer import Tokenizer

IGNORE = -100

# --------------------------------------------------------------------------- generated corpus

_SUBJECTS = ["the cat", "a dog", "the old sailor", "my neighbour", "the robot", "a small bird", "the teacher"]
_VERBS = ["sees", "likes", "follows", "paints", "finds", "carries", "watches"]
_OBJECTS = ["the red ball", "a green apple", "the river", "an open door", "the tall tree", "a quiet song"]
_PLACES = ["in the garden", "near the harbour", "at school", "under the bridge", "on the hill"]


def generate_corpus(n_docs: int, seed: int) -> list[str]:
    """A deterministic corpus with learnable structure: simple sentences, arithmetic and counting."""
    rng = random.Random(seed)
    docs = []
    for _ in range(n_docs):
        kind = rng.randrange(3)
        if kind == 0:
            sentences = [
                f"{rng.choice(_SUBJECTS)} {rng.choice(_VERBS)} {rng.choice(_OBJECTS)} {rng.choice(_PLACES)}."
                for _ in range(rng.randint(2, 5))
            ]
            docs.append(" ".join(s[0].upper() + s[1:] for s in sentences))
        elif kind == 1:
            facts = []
            for _ in range(rng.randint(3, 6)):
                a, b = rng.randint(0, 50), rng.randint(0, 50)
                facts.append(f"{a} plus {b} is {a + b}.")
            docs.append(" ".join(facts))
        else:
            start = rng.randint(0, 80)
            numbers = ", ".join(str(i) for i in range(start, start + rng.randint(5, 15)))
            docs.append(f"Counting: {numbers}.")
    return docs


# --------------------------------------------------------------------------- reading + packing


def read_jsonl(path: Path, fmt: str) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise RecipeError(f"{path}:{lineno}: not JSON: {exc}") from exc
            if not isinstance(record, dict):
                raise RecipeError(f"{path}:{lineno}: expected an object, got {type(record).__name__}")
            has_text = isinstance(record.get("text"), str)
            has_msgs = isinstance(record.get("messages"), list)
            wrong = (fmt == "text" and not has_text) or (fmt == "chat" and not has_msgs)
            if wrong or not (has_text or has_msgs):
                want = {"text": '"text" (a string)', "chat": '"messages" (a list)'}.get(
                    fmt, '"text" or "messages"'
                )
                raise RecipeError(f"{path}:{lineno}: record has no {want}")
            yield record


def tokenize_records(
    records: Iterable[dict[str, Any]], tok: Tokenizer, assistant_only: bool
) -> tuple[list[int], list[bool]]:
    """Concatenate documents, each followed by <eos>; ``trainable`` marks tokens that are predicted."""
    ids: list[int] = []
    trainable: list[bool] = []
    for rec in records:
        if isinstance(rec.get("messages"), list):
            doc, mask = tok.encode_chat(rec["messages"])
            if not assistant_only:
                mask = [True] * len(doc)
        else:
            doc = tok.encode(rec["text"])
            mask = [True] * len(doc)
        ids += [*doc, tok.eos_id]
        trainable += [*mask, True]
    return ids, trainable


@dataclass
class PackedBlocks:
    """``tokens[i]`` holds seq_len + 1 tokens; ``labels`` the same shifted targets with -100 where masked."""

    tokens: torch.Tensor  # int64 [N, seq_len + 1]
    targets: torch.Tensor  # int64 [N, seq_len + 1] (token id, or IGNORE)

    def __len__(self) -> int:
        return self.tokens.size(0)

    def batch(self, indices: np.ndarray | list[int]) -> dict[str, torch.Tensor]:
        idx = torch.as_tensor(np.asarray(indices, dtype=np.int64))
        return {"input_ids": self.tokens[idx, :-1], "labels": self.targets[idx, 1:]}


def pack(ids: list[int], trainable: list[bool], seq_len: int) -> PackedBlocks:
    n = len(ids) // (seq_len + 1)
    if n == 0:
        raise RecipeError(
            f"data: only {len(ids)} tokens, not enough for one block of data.seq_len {seq_len} + 1"
        )
    tokens = torch.tensor(ids[: n * (seq_len + 1)], dtype=torch.int64).view(n, seq_len + 1)
    mask = torch.tensor(trainable[: n * (seq_len + 1)], dtype=torch.bool).view(n, seq_len + 1)
    return PackedBlocks(tokens, torch.where(mask, tokens, torch.full_like(tokens, IGNORE)))


def synthetic_blocks(n: int, seq_len: int, vocab: int, seed: int) -> PackedBlocks:
    gen = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, vocab, (n, seq_len + 1), generator=gen, dtype=torch.int64)
    return PackedBlocks(tokens, tokens.clone())


def load_datasets(recipe: Recipe, tok: Tokenizer | None, vocab: int) -> tuple[PackedBlocks, PackedBlocks]:
    """(train, eval) blocks for the recipe."""
    d = recipe.data
    if d.kind == "synthetic":
        train = synthetic_blocks(d.synthetic_blocks, d.seq_len, vocab, recipe.seed)
        return train, synthetic_blocks(max(d.synthetic_blocks // 16, 1), d.seq_len, vocab, recipe.seed + 1)
    assert tok is not None
    if d.kind == "generated":
        docs = generate_corpus(d.generated_docs, recipe.seed)
        records: Iterable[dict[str, Any]] = ({"text": t} for t in docs)
    else:
        records = read_jsonl(Path(str(d.path)), d.format)
    blocks = pack(*tokenize_records(records, tok, d.assistant_only_loss), d.seq_len)
    # eval_path belongs to jsonl (as in required_paths): a jsonl recipe switched to data.kind=generated keeps
    # its key but evaluates on the corpus's own held-out share
    if d.kind == "jsonl" and d.eval_path:
        eval_blocks = pack(
            *tokenize_records(read_jsonl(Path(d.eval_path), d.format), tok, d.assistant_only_loss), d.seq_len
        )
        return blocks, eval_blocks
    n_eval = int(len(blocks) * d.eval_fraction)
    if n_eval == 0:
        return blocks, PackedBlocks(blocks.tokens[:1], blocks.targets[:1])
    cut = len(blocks) - n_eval
    train = PackedBlocks(blocks.tokens[:cut], blocks.targets[:cut])
    return train, PackedBlocks(blocks.tokens[cut:], blocks.targets[cut:])


# --------------------------------------------------------------------------- order


class StepSampler:
    """Block indices of optimizer step ``step``: a function of (seed, step) only."""

    def __init__(self, n_blocks: int, global_batch: int, seed: int) -> None:
        self.n = n_blocks
        self.g = global_batch
        self.seed = seed
        self._perms: dict[int, np.ndarray] = {}

    def _perm(self, epoch: int) -> np.ndarray:
        if epoch not in self._perms:
            if len(self._perms) > 2:
                self._perms.pop(min(self._perms))
            self._perms[epoch] = np.random.default_rng([self.seed, epoch]).permutation(self.n)
        return self._perms[epoch]

    def global_indices(self, step: int) -> np.ndarray:
        pos = np.arange(step * self.g, (step + 1) * self.g, dtype=np.int64)
        epochs, offsets = pos // self.n, pos % self.n
        return np.array([self._perm(int(e))[int(o)] for e, o in zip(epochs, offsets, strict=True)])

    def micro_batches(
        self, data: PackedBlocks, step: int, dp_rank: int, layout: BatchLayout
    ) -> list[dict[str, torch.Tensor]]:
        """Replica ``dp_rank``'s micro-batches of step ``step``, cut as ``layout`` says."""
        if layout.global_batch_size != self.g:
            raise ValueError(f"layout of {layout.global_batch_size} sequences per step, sampler of {self.g}")
        idx = self.global_indices(step)
        return [data.batch(idx[s]) for s in layout.micro_batch_slices(dp_rank)]


def eval_batches(
    data: PackedBlocks, n_batches: int, dp_rank: int, layout: BatchLayout
) -> list[dict[str, torch.Tensor]]:
    """This rank's micro-batches of a fixed eval set: the first ``n_batches * global_batch_size`` eval blocks
    (wrapping around), split like a training step, so the averaged eval loss is the same on any world size."""
    g = layout.global_batch_size
    out = []
    for k in range(n_batches):
        for s in layout.micro_batch_slices(dp_rank):
            out.append(data.batch([(k * g + p) % len(data) for p in range(s.start, s.stop)]))
    return out
