# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin behind rdmaops.cluster.source_tree (documentation: plugins/modules/source_tree.py).

Reads the node's stamp (ansible.builtin.slurp); where it differs from the tree's digest, sends the tree as
one tar built on the controller (module_utils/site/source_tree.py) and extracts it with
ansible.builtin.unarchive. A no-change run costs the one read.
"""

from __future__ import annotations

import base64
import os
import tempfile
from typing import Any

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.rdmaops.cluster.plugins.module_utils.site import source_tree
from ansible_collections.rdmaops.cluster.plugins.module_utils.site.digests import StampError
from ansible_collections.rdmaops.cluster.plugins.plugin_utils.phase import task_args


class ActionModule(ActionBase):
    TRANSFERS_FILES = True

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        p = task_args("source_tree", source_tree.SOURCE_TREE_SPEC, self._task.args)
        try:
            digest, found = source_tree.plan(p["files"], p["stamp"])
        except StampError as exc:
            raise AnsibleActionFail(str(exc)) from exc
        shell = self._connection._shell
        stamp_path = shell.join_path(p["dest"], p["stamp"])
        owner = {k: p[k] for k in ("owner", "group") if p[k]}
        try:
            read = self._execute_module("ansible.legacy.slurp", {"src": stamp_path}, task_vars=task_vars)
            # a missing or unreadable stamp: the node has no copy this run can trust
            old = "" if read.get("failed") else base64.b64decode(read["content"]).decode(errors="replace")
            before = source_tree.stamp_digest(old)
            names = [entry[0] for entry in found]
            result.update(changed=before != digest, dest=p["dest"], digest=digest, stamp=before, files=names)
            if before == digest:
                return result
            new = source_tree.stamp_text(digest, found)
            if self._task.diff:
                # the stamps' per-file lines: the files that differ from the last copy (docs of the module)
                result["diff"] = {"before_header": stamp_path, "after_header": stamp_path}
                result["diff"].update(before=old, after=new)
            if self._play_context.check_mode:
                return result
            made = self._execute_module(
                "ansible.legacy.file",
                {"path": p["dest"], "state": "directory", "mode": "0755", **owner},
                task_vars=task_vars,
            )
            if made.get("failed"):
                return {**result, "failed": True, "msg": f"source_tree: {made.get('msg')}"}
            remote = shell.join_path(shell.tmpdir, "source.tar")
            with tempfile.TemporaryDirectory() as local_dir:
                local = os.path.join(local_dir, "source.tar")
                with open(local, "wb") as fh:
                    fh.write(source_tree.archive(found, new, p["stamp"]))
                self._transfer_file(local, remote)
            self._fixup_perms2((shell.tmpdir, remote))
            out = self._execute_module(
                "ansible.legacy.unarchive", {"src": remote, "dest": p["dest"], **owner}, task_vars=task_vars
            )
            if out.get("failed"):
                return {**result, "failed": True, "msg": f"source_tree: {out.get('msg')}"}
            return result
        finally:
            self._remove_tmp_path(shell.tmpdir)
