#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: site_stamp
short_description: Record a node's converge, or tell whether it still holds (site.yml's fast path)
version_added: "0.1.0"
description:
  - With O(state=present), observes what the roles manage on the node (O(watch)) and writes it, with the
    digest of the inputs of the run (O(digest)), to O(path). site.yml does this at its end on every node
    that finished every play.
  - With O(state=check), reads O(path) and tells whether the node is still as that converge left it, with the
    same digest (inventory, extra vars, collection code) and the same observations. Any difference is named
    in RV(reasons), for example that slurmd was active and is now failed.
  - What is observed, per role, is the sha256 of each file, the ActiveState and UnitFileState of each
    service, whether each Debian package is installed, the names matched by each glob (a venv's
    C(*.dist-info) directories, which name its distributions and versions) and the global addresses of
    each interface; and for the node its kernel release, OS release, CPU count, NVIDIA driver version
    and GPU count.
author:
  - Rdmaops Developers (@rdmaops)
options:
  state:
    description:
      - C(check) compares, C(present) records.
    type: str
    choices: [check, present]
    default: check
  digest:
    description:
      - Digest of the inputs of the run (module rdmaops.cluster.site_digest).
    type: str
    required: true
  watch:
    description:
      - Role name -> what the role manages, as lists under the keys C(files) (absolute paths),
        C(services) (unit names), C(packages) (Debian package names), C(globs) (absolute path patterns) and
        C(addresses) (interface names). Required with O(state=present); a check reads it from the stamp.
    type: dict
  path:
    description:
      - The stamp file.
    type: path
    default: /var/lib/rdmaops/site-stamp.json
attributes:
  check_mode:
    description: A check changes nothing in any mode; with O(state=present) the stamp is not written.
    support: full
  diff_mode:
    description: No diff; the stamp is the tool's bookkeeping, not the node's configuration.
    support: none
  platform:
    description: Linux hosts with systemd and dpkg.
    support: full
    platforms: posix
notes:
  - The fast path is only as complete as O(watch) and the digest. site.yml documents what each role watches;
    a run with C(-e rdmaops_fast_path=false) runs every role whatever the stamp says.
"""

EXAMPLES = r"""
- name: Compare each node with its last converge
  rdmaops.cluster.site_stamp:
    digest: "{{ rdmaops_site_digest.digest }}"
  register: site_check

- name: Record the converge
  rdmaops.cluster.site_stamp:
    state: present
    digest: "{{ rdmaops_site_digest.digest }}"
    watch:
      slurm:
        files: [/etc/slurm/slurm.conf]
        services: [munge, slurmd]
        packages: [slurmd]
"""

RETURN = r"""
current:
  description:
    - Whether the stamp exists, its digest equals O(digest) and nothing watched differs (state=check).
  returned: always
  type: bool
  sample: false
reasons:
  description: Why the node is not current, one line each (state=check); empty when it is.
  returned: always
  type: list
  elements: str
  sample: ["slurm: /etc/slurm/slurm.conf changed"]
watched:
  description: How many entries of each kind the stamp watches.
  returned: always
  type: dict
  sample: {files: 9, services: 4, packages: 21, globs: 1, addresses: 2}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.rdmaops.cluster.plugins.module_utils.site import stamp as site_stamp


def _counts(watch: dict) -> dict[str, int]:
    return {
        kind: sum(len(kinds.get(kind, [])) for kinds in watch.values()) for kind in site_stamp.WATCH_KINDS
    }


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "state": {"type": "str", "choices": ["check", "present"], "default": "check"},
            "digest": {"type": "str", "required": True},
            "watch": {"type": "dict"},
            "path": {"type": "path", "default": "/var/lib/rdmaops/site-stamp.json"},
        },
        required_if=[("state", "present", ["watch"])],
        supports_check_mode=True,
    )
    params = module.params

    def run(argv: list[str]) -> tuple[int, str, str]:
        rc, out, err = module.run_command(argv, environ_update={"LC_ALL": "C", "SYSTEMD_PAGER": ""})
        return rc, out, err

    try:
        if params["state"] == "check":
            current, reasons, stamp = site_stamp.check(params["path"], params["digest"], run)
            watch = site_stamp.check_watch(stamp.get("watch", {})) if stamp else {}
            module.exit_json(changed=False, current=current, reasons=reasons, watched=_counts(watch))
        watch = site_stamp.check_watch(params["watch"])
        text = site_stamp.render(params["digest"], watch, site_stamp.observe(watch, run))
    except site_stamp.StampError as exc:
        module.fail_json(msg=str(exc))

    changed = site_stamp.write_if_changed(params["path"], text, module.check_mode, module.atomic_move)
    module.exit_json(changed=changed, current=True, reasons=[], watched=_counts(watch))


if __name__ == "__main__":
    main()
