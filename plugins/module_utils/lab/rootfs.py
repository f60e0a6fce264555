# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Files inside a node's root: written only when they differ, optionally as a managed block."""

from __future__ import annotations

import os

from ansible_collections.rdmaops.cluster.plugins.module_utils.lab.host import Host
from ansible_collections.rdmaops.cluster.plugins.module_utils.lab.plan import LabError


def render_block(current: str, block: str, marker: str) -> str:
    """current with the lines between '# BEGIN marker' and '# END marker' replaced by block (or appended)."""
    begin, end = f"# BEGIN {marker}", f"# END {marker}"
    body = block if block.endswith("\n") or not block else block + "\n"
    lines = current.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.rstrip("\n") == begin]
    ends = [i for i, line in enumerate(lines) if line.rstrip("\n") == end]
    wrapped = f"{begin}\n{body}{end}\n"
    if starts and ends and ends[0] > starts[0]:
        return "".join(lines[: starts[0]]) + wrapped + "".join(lines[ends[0] + 1 :])
    if current and not current.endswith("\n"):
        current += "\n"
    return current + wrapped


def write_root_file(host: Host, root: str, path: str, content: str, mode: int, marker: str | None) -> None:
    """Write one file inside a node's root (only when it differs); with marker, only a managed block."""
    rel = path.lstrip("/")
    if not rel or ".." in rel.split("/"):
        raise LabError(f"file path {path!r} must be a path inside the node's root")
    target = os.path.join(root, rel)
    try:
        with open(target, encoding="utf-8") as fh:
            current: str | None = fh.read()
    except FileNotFoundError:
        current = None
    wanted = render_block(current or "", content, marker) if marker else content
    same_mode = current is not None and (os.stat(target).st_mode & 0o7777) == mode
    if current == wanted and same_mode:
        return
    host.change(f"write {target}")
    if host.check_mode:
        return
    os.makedirs(os.path.dirname(target), exist_ok=True)
    tmp = target + ".rdmaops-lab-tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(wanted)
    os.chmod(tmp, mode)
    os.replace(tmp, target)
