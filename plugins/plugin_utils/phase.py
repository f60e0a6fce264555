# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One role phase on the controller: a role's inputs in, ``{errors: [...], plan: {...}}`` out.

A role's ``tasks/validate.yml`` (and any later planning phase) is one task that calls one action plugin
built on :class:`PhaseAction`. The plugin checks its arguments against the phase's argument spec, calls the
phase's pure function (plain Python in ``plugins/module_utils/<concern>/``, unit-tested there), and either
fails with every error joined into one message (each names its bad value) or returns the plan. Nothing on a
node changes, and the result is the same in check mode, so ``--check`` shows the same refusals.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.plugins.action import ActionBase

Phase = Callable[[Mapping[str, Any]], Mapping[str, Any]]


def task_args(name: str, spec: Mapping[str, Any], args: Mapping[str, Any]) -> dict[str, Any]:
    """An action plugin's arguments checked against its module's spec (what ansible-doc shows), defaults in;
    a bad one fails the task, named, before anything runs."""
    validated = ArgumentSpecValidator(dict(spec)).validate(dict(args))
    if validated.error_messages:
        raise AnsibleActionFail(f"{name}: {'; '.join(validated.error_messages)}")
    return dict(validated.validated_parameters)


def unique(errors: list[str]) -> list[str]:
    """The errors in their first order, each once (several checks may find the same bad value)."""
    return list(dict.fromkeys(str(e) for e in errors))


class PhaseAction(ActionBase):
    """Subclasses set NAME, ARGUMENT_SPEC and PHASE (a function of the validated parameters)."""

    TRANSFERS_FILES = False
    _requires_connection = False
    NAME: ClassVar[str] = ""
    ARGUMENT_SPEC: ClassVar[Mapping[str, Any]] = {}
    PHASE: ClassVar[Phase]

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        out = type(self).PHASE(task_args(self.NAME, self.ARGUMENT_SPEC, self._task.args))
        errors = unique(list(out.get("errors", [])))
        result.update(changed=False, errors=errors, plan=out.get("plan", {}))
        if errors:
            result.update(failed=True, msg="; ".join(errors))
        return result
