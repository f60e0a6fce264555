"""PhaseAction: argument spec first, then the phase; all errors in one message, or the plan."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import pytest
from ansible.errors import AnsibleActionFail

from ansible_collections.rdmaops.cluster.plugins.plugin_utils.phase import PhaseAction

from ..conftest import run_action


def _phase(params: Mapping[str, Any]) -> Mapping[str, Any]:
    errors = [f"mtu {m!r} is too large" for m in params["mtus"] if m > 9216]
    return {"errors": errors + errors, "plan": {"largest": max(params["mtus"])}}


class Example(PhaseAction):
    NAME = "example_check"
    ARGUMENT_SPEC: ClassVar[dict[str, Any]] = {"mtus": {"type": "list", "elements": "int", "required": True}}
    PHASE = _phase


def run(**args: Any) -> dict[str, Any]:
    return run_action(Example, args)


def test_returns_the_plan_when_nothing_is_wrong() -> None:
    out = run(mtus=[1500, 9000])
    assert out["plan"] == {"largest": 9000} and out["errors"] == [] and not out.get("failed")
    assert out["changed"] is False


def test_fails_with_every_error_once_in_one_message() -> None:
    out = run(mtus=[9300, 9000, 9400])
    assert out["failed"] is True
    assert out["msg"] == "mtu 9300 is too large; mtu 9400 is too large"
    assert out["errors"] == ["mtu 9300 is too large", "mtu 9400 is too large"]


def test_a_bad_type_is_one_line_naming_the_argument() -> None:
    with pytest.raises(AnsibleActionFail, match=r"^example_check: .*mtus.*") as exc:
        run(mtus=["jumbo"])
    assert "\n" not in str(exc.value)
