# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible's default output, with two kinds of failure made short enough to read."""

from __future__ import annotations

DOCUMENTATION = r"""
name: readable
type: stdout
short_description: Ansible's default output; a role's argument errors on one line, verdicts as plain lines
version_added: "0.1.0"
description:
  - Everything as the default callback prints it, except two kinds of failure.
  - A role variable of a bad type (the argument-spec check Ansible runs before a role) is one line naming the
    role and the variable, instead of the failed result with the whole argument spec (hundreds of lines).
  - A failure whose message is a list of lines and that carries nothing else (such as the train role's
    verdict, followed by the last lines of the failing node's log) prints those lines as they are, once.
  - Set it as the stdout callback (C(stdout_callback = rdmaops.cluster.readable) in ansible.cfg, as this
    repository does); it takes the default callback's options.
extends_documentation_fragment:
  - default_callback
  - result_format_callback
requirements:
  - set as stdout callback in configuration
"""

# ansible-test wants the imports after DOCUMENTATION
from collections.abc import Mapping  # noqa: E402
from typing import Any  # noqa: E402

from ansible import constants as C  # noqa: E402
from ansible.plugins.callback.default import CallbackModule as DefaultCallback  # noqa: E402

# Keys of a failed result that say nothing beyond its message.
PLAIN_KEYS = {
    "msg",
    "changed",
    "failed",
    # the default callback shows a failure's traceback only with -vvv (ansible-core 2.19 fills it for fail)
    "exception",
    "_ansible_no_log",
    "_ansible_verbose_always",
    "_ansible_delegated_vars",
}


def argument_error_line(result: Mapping[str, Any]) -> str | None:
    """One line for a failed role argument check (validate_argument_spec), else None."""
    if "argument_spec_data" not in result:
        return None
    errors = [str(e) for e in result.get("argument_errors") or []]
    if not errors:
        errors = [line for line in str(result.get("msg", "")).splitlines()[1:] if line.strip()]
    context = result.get("validate_args_context") or {}
    where = f"role {context.get('name')}" if context.get("name") else "arguments"
    if context.get("argument_spec_name") not in (None, "", "main"):
        where += f" (entry point {context['argument_spec_name']})"
    return f"{where}: {'; '.join(errors)} (types: meta/argument_specs.yml of the role)"


def plain_lines(result: Mapping[str, Any]) -> list[str] | None:
    """The lines of a failure whose message is a list of strings and that carries nothing else."""
    msg = result.get("msg")
    if not isinstance(msg, list) or not all(isinstance(m, str) for m in msg):
        return None
    if set(result) - PLAIN_KEYS:
        return None
    return list(msg)


def _result(task_result: Any) -> Mapping[str, Any]:
    # ansible-core 2.19 calls it .result; earlier versions ._result
    return getattr(task_result, "result", None) or getattr(task_result, "_result", {})


class CallbackModule(DefaultCallback):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "stdout"
    CALLBACK_NAME = "rdmaops.cluster.readable"

    def v2_runner_on_failed(self, result: Any, ignore_errors: bool = False) -> None:
        res = _result(result)
        line = argument_error_line(res)
        lines = [line] if line is not None else plain_lines(res)
        if lines is None:
            super().v2_runner_on_failed(result, ignore_errors)
            return
        if self._last_task_banner != result.task._uuid:
            self._print_task_banner(result.task)
        # warnings as the default callback shows them; not its error block, which repeats the message
        # (ansible-core 2.19 prints "[ERROR]: Task failed: ..." with the task's source before "fatal:")
        handle = getattr(self, "_handle_warnings", None)
        if handle is not None:
            handle(res)
        head = f"fatal: [{self.host_label(result)}]: FAILED!"
        stderr = self.get_option("display_failed_stderr")
        if len(lines) == 1:
            self._display.display(f"{head} {lines[0]}", color=C.COLOR_ERROR, stderr=stderr)
        else:
            self._display.display(head, color=C.COLOR_ERROR, stderr=stderr)
            for text in lines:
                self._display.display(f"  {text}", color=C.COLOR_ERROR, stderr=stderr)
        if ignore_errors:
            self._display.display("...ignoring", color=C.COLOR_SKIP)
