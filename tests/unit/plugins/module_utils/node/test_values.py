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


# value: whole(), number(), as_float()
READINGS = [
    (9000, 9000, 9000, 9000.0),
    (-1, -1, -1, -1.0),
    (2.5, None, 2.5, 2.5),
    ("9000", 9000, 9000, 9000.0),
    ("007", 7, 7, 7.0),
    (Tagged("24"), 24, 24, 24.0),
    ("-2", None, -2, -2.0),
    ("2.5", None, 2.5, 2.5),
    (" 3", None, None, 3.0),
    ("1\n", None, None, 1.0),
    ("1e3", None, None, 1000.0),
    (".5", None, None, 0.5),
    ("2.", None, None, 2.0),
    ("²", None, None, None),  # str.isdigit() says yes; int() and float() say no
    (True, None, None, None),
    (False, None, None, None),
    ("fast", None, None, None),
    ("", None, None, None),
    (None, None, None, None),
    ([], None, None, None),
]


@pytest.mark.parametrize(("value", "whole", "number", "as_float"), READINGS)
def test_each_reading_of_a_number_or_its_text(value: Any, whole: Any, number: Any, as_float: Any) -> None:
    got = (values.whole(value), values.number(value), values.as_float(value))
    assert got == (whole, number, as_float)
    assert [type(g) for g in got] == [type(whole), type(number), type(as_float)]


def test_as_float_leaves_nan_and_infinity_to_the_caller() -> None:
    assert math.isnan(values.as_float("nan") or 0.0) and values.as_float("inf") == math.inf
