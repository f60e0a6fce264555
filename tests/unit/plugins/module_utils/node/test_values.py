"""values: what counts as a number (plugins/module_utils/node/values.py); a bool never does."""

from __future__ import annotations

import math
from typing import Any

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils.node import values


class Tagged(str):
    """A str subclass, as Ansible hands a templated string."""


@pytest.mark.parametrize(
    ("value", "is_int", "is_number"),
    [
        (0, True, True),
        (-3, True, True),
        (2.5, False, True),
        (True, False, False),
        (False, False, False),
        ("1", False, False),
        (None, False, False),
        ([1], False, False),
    ],
)
def test_is_int_and_is_number_take_the_value_itself_and_no_bool(
    value: Any, is_int: bool, is_number: bool
) -> None:
    assert values.is_int(value) is is_int
    assert values.is_number(value) is is_number


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (9000, 9000),
        (-1, -1),
        ("9000", 9000),
        ("007", 7),
        (Tagged("24"), 24),
        (True, None),
        (9000.0, None),
        ("-1", None),
        (" 1", None),
        ("1\n", None),
        ("1.5", None),
        ("²", None),  # str.isdigit() says yes; int() says no
        ("", None),
        (None, None),
    ],
)
def test_whole_is_an_int_or_its_ascii_digits(value: Any, expected: int | None) -> None:
    got = values.whole(value)
    assert got == expected and type(got) is type(expected)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (30, 30),
        (0.5, 0.5),
        ("30", 30),
        ("-2", -2),
        ("2.5", 2.5),
        (False, None),
        ("1e3", None),
        (".5", None),
        ("2.", None),
        ("inf", None),
        (" 3", None),
        (None, None),
    ],
)
def test_number_is_a_number_or_its_decimal_text(value: Any, expected: float | None) -> None:
    got = values.number(value)
    assert got == expected and type(got) is type(expected)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1, 1.0),
        ("0.8", 0.8),
        (" 2.5 ", 2.5),
        ("1e3", 1000.0),
        (True, None),
        ("fast", None),
        (None, None),
        ([], None),
    ],
)
def test_as_float_is_what_float_reads_but_a_bool(value: Any, expected: float | None) -> None:
    assert values.as_float(value) == expected


def test_as_float_leaves_nan_and_infinity_to_the_caller() -> None:
    assert math.isnan(values.as_float("nan") or 0.0) and values.as_float("inf") == math.inf
