# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin behind rdmaops.cluster.site_digest (documentation: plugins/modules/site_digest.py): reads
every host's variables as written (untemplated) from the task's hostvars, which only the controller has."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.rdmaops.cluster.plugins.module_utils.site import stamp
from ansible_collections.rdmaops.cluster.plugins.plugin_utils.phase import task_args


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        p = task_args("site_digest", stamp.SITE_DIGEST_SPEC, self._task.args)
        hostvars = (task_vars or {}).get("hostvars", {})
        raw_get = getattr(hostvars, "raw_get", None)
        variables: dict[str, Mapping[str, Any]] = {}
        for name in p["hosts"]:
            # as written: a templated value counts by its text, and a value that only templates later (after
            # fact gathering) does not fail here
            found = raw_get(name) if raw_get is not None else hostvars.get(name)
            if not isinstance(found, Mapping):
                raise AnsibleActionFail(f"site_digest: no variables for host {name!r}")
            variables[name] = found
        try:
            digest = stamp.run_digest(variables, p["code_root"], p["code_parts"])
        except stamp.StampError as exc:
            raise AnsibleActionFail(f"site_digest: {exc}") from exc
        result.update(changed=False, digest=digest)
        return result
