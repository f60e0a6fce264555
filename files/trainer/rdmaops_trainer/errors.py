"""The trainer's user-facing error, in a module of its own so that ``config`` and ``layout`` can both
raise it without importing each other; ``config`` re-exports it (``rdmaops_trainer.config.RecipeError``)."""

from __future__ import annotations


class RecipeError(ValueError):
    """A recipe (file, key or value) is invalid; the message names what is wrong."""
