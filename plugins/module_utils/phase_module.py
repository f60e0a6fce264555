# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The main() of a module whose work is its action plugin's (the role phases of plugins/plugin_utils/phase.py,
train_watch): its documentation and argument spec live in the module; run as a plain module, it says so."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible.module_utils.basic import AnsibleModule


def required_raw(*names: str) -> dict[str, dict[str, Any]]:
    """Argument spec entries for settings a check phase takes as they are (type raw, required): its own rules,
    not Ansible's type conversion, refuse a bad value, naming the role variable and the value."""
    return {name: {"type": "raw", "required": True} for name in names}


def refuse_without_action(name: str, spec: Mapping[str, Any]) -> None:
    module = AnsibleModule(argument_spec=dict(spec), supports_check_mode=True)
    # Reached only if the action plugin is bypassed: the phase runs on the controller.
    module.fail_json(msg=f"{name} runs on the controller through its action plugin (rdmaops.cluster)")
