# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What counts as a number in a setting: the one reading, for node and controller code alike.

A bool is never a number here, though Python counts True as the int 1: a threshold or a count of ``true`` is
a mistake, not 1. Settings come from YAML, JSON or ``-e``, so some readers also take a number's text.

- is_int(), is_number(): the value itself is an int (an int or a float), not a bool;
- whole(): an int, or a string of ASCII digits, as an int;
- number(): a number, or its decimal text ("-1", "2.5"), as a number;
- as_float(): what float() reads (a number, "1e3", " 2.5 "), as a float.

Node code (see ``node``): it travels with the health checks; the roles' rules on the controller use it too.
"""

from __future__ import annotations

import re
from typing import Any

_DIGITS = re.compile(r"[0-9]+")
_DECIMAL = re.compile(r"-?[0-9]+(\.[0-9]+)?")


def is_int(value: Any) -> bool:
    """An int, not a bool."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    """An int or a float, not a bool."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def whole(value: Any) -> int | None:
    """An int, or a string of ASCII digits, as an int; None for anything else (a bool too)."""
    if is_int(value):
        return int(value)
    if isinstance(value, str) and _DIGITS.fullmatch(value):
        return int(value)
    return None


def number(value: Any) -> int | float | None:
    """A number, or its decimal text (ASCII digits, a leading minus, a fraction after a dot), as a number (an
    int for text without a dot); None for anything else (a bool too)."""
    if is_number(value):
        return value
    if isinstance(value, str) and _DECIMAL.fullmatch(value):
        return float(value) if "." in value else int(value)
    return None


def as_float(value: Any) -> float | None:
    """float() of the value: a number or any text float() reads; None for a bool and what float() refuses."""
    if isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None
