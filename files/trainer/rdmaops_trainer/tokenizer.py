"""Tokenizers: a byte-level one that needs no download, and transformers tokenizers from local paths.

Both give ``encode(text)``, ``encode_chat(messages) -> (ids, trainable)``, ``eos_id`` and ``vocab_size``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from .config import Recipe, RecipeError

Message = dict[str, str]


class Tokenizer(Protocol):
    eos_id: int
    vocab_size: int

    def encode(self, text: str) -> list[int]: ...

    def encode_chat(self, messages: Sequence[Message]) -> tuple[list[int], list[bool]]: ...


def _check_messages(messages: Sequence[Message]) -> None:
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict) or "role" not in msg or "content" not in msg:
            raise ValueError(f"message {i} needs 'role' and 'content': {msg!r}")


class ByteTokenizer:
    """UTF-8 bytes 0-255 plus <eos>=256; chat turns rendered as ``<|role|>\\ncontent\\n``."""

    eos_id = 256
    vocab_size = 257

    def encode(self, text: str) -> list[int]:
        return list(text.encode("utf-8"))

    def decode(self, ids: Sequence[int]) -> str:
        return bytes(i for i in ids if i < 256).decode("utf-8", errors="replace")

    def encode_chat(self, messages: Sequence[Message]) -> tuple[list[int], list[bool]]:
        _check_messages(messages)
        ids: list[int] = []
        trainable: list[bool] = []
        for msg in messages:
            header = self.encode(f"<|{msg['role']}|>\n")
            body = [*self.encode(msg["content"] + "\n")]
            is_assistant = msg["role"] == "assistant"
            if is_assistant:
                body.append(self.eos_id)
            ids += header + body
            trainable += [False] * len(header) + [is_assistant] * len(body)
        return ids, trainable


class HFTokenizer:
    """transformers AutoTokenizer from a local directory; chat through the model's own chat template."""

    def __init__(self, path: str) -> None:
        from transformers import AutoTokenizer

        self.tok = AutoTokenizer.from_pretrained(path)
        eos = self.tok.eos_token_id
        if eos is None:
            raise RecipeError(f"tokenizer.path: {path} defines no eos token")
        self.eos_id = int(eos)
        self.vocab_size = len(self.tok)

    def encode(self, text: str) -> list[int]:
        return list(self.tok.encode(text, add_special_tokens=False))

    def _template_ids(self, messages: Sequence[Message]) -> list[int]:
        out: Any = self.tok.apply_chat_template(list(messages), tokenize=True)
        if hasattr(out, "keys"):  # transformers >= 5 may return a BatchEncoding
            out = out["input_ids"]
        return list(out)

    def encode_chat(self, messages: Sequence[Message]) -> tuple[list[int], list[bool]]:
        _check_messages(messages)
        if not getattr(self.tok, "chat_template", None):
            raise ValueError("the tokenizer has no chat_template; use format: text")
        ids: list[int] = []
        trainable: list[bool] = []
        # render growing prefixes: the tokens a message adds are the difference (templates are prefix-stable
        # for complete turns; when one is not, the whole conversation is trained on, never silently dropped)
        for i, msg in enumerate(messages):
            full = self._template_ids(messages[: i + 1])
            if full[: len(ids)] != ids:
                return full, [True] * len(full)
            new = full[len(ids) :]
            ids = full
            trainable += [msg["role"] == "assistant"] * len(new)
        return ids, trainable


def build_tokenizer(recipe: Recipe) -> Tokenizer:
    t = recipe.tokenizer
    if t.kind == "byte":
        return ByteTokenizer()
    if not t.path or not Path(t.path).exists():
        raise RecipeError(f"tokenizer.path: {t.path!r} does not exist")
    return HFTokenizer(t.path)
