# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A source tree copied to a node in one transfer, only when its digest differs from the node's stamp.

The trainer (python_env), the plugin's C sources (nccl_mesh_plugin) and the health checks' code (slurm) are
trees of small files. Copied file by file, a fresh node pays a round trip per file (about 60 for the
trainer); copied as one tar, it pays one transfer and one extraction. The tar is built here on the
controller: every directory 0755 and every file 0644, owned by root, the stamp last, so that an interrupted
extraction leaves the old stamp and the next run copies again. The stamp is the tree's digest on its first
line, then one ``sha256  path`` line per file: ``--diff`` shows the files that differ from the last copy as
the lines that differ between the node's stamp and the new one, with no read of the node's files.
"""

from __future__ import annotations

import hashlib
import io
import tarfile
import time
from collections.abc import Iterable
from pathlib import PurePosixPath
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.site.digests import (
    StampError,
    content_digest,
    read_tree,
)

SOURCE_TREE_SPEC: dict[str, Any] = {
    "files": {"type": "list", "elements": "raw", "required": True},
    "dest": {"type": "path", "required": True},
    "stamp": {"type": "str", "default": ".rdmaops-source-digest"},
    "owner": {"type": "str"},
    "group": {"type": "str"},
}


def _name(name: str) -> PurePosixPath:
    path = PurePosixPath(name)
    if not name or path.is_absolute() or ".." in path.parts or str(path) != name.rstrip("/"):
        raise StampError(f"source_tree: {name!r} is not a plain relative path")
    return path


def plan(files: Iterable[Any], stamp: str) -> tuple[str, list[tuple[str, bytes]]]:
    """(digest, [(name on the node, content)]), names sorted, each file read once; raises StampError naming a
    bad entry (two files of one name, an unreadable file, a path that climbs out of the destination)."""
    found = read_tree(files, "source_tree")
    if not found:
        raise StampError("source_tree: no files to copy")
    _name(stamp)
    for name, _data in found:
        if _name(name) == PurePosixPath(stamp):
            raise StampError(f"source_tree: {name!r} is the stamp's own name")
    return content_digest(found), found


def stamp_text(digest: str, found: list[tuple[str, bytes]]) -> str:
    """The stamp's content: the digest, then each file's sha256 and name (sha256sum's format)."""
    return f"{digest}\n" + "".join(f"{hashlib.sha256(data).hexdigest()}  {name}\n" for name, data in found)


def stamp_digest(text: str) -> str:
    """The digest a stamp holds (its first line; a stamp of an older copy holds only that)."""
    return next(iter(text.split()), "")


def _info(name: str, kind: bytes, mode: int, size: int, now: float) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.size, info.mtime = kind, mode, size, int(now)
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info


def archive(found: list[tuple[str, bytes]], stamp_body: str, stamp: str, now: float | None = None) -> bytes:
    """An uncompressed tar of ``found``: parent directories first, then the files, then the stamp."""
    now = time.time() if now is None else now
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        dirs = sorted({str(p) for name, _data in found for p in _name(name).parents if str(p) != "."})
        for d in dirs:
            tar.addfile(_info(d, tarfile.DIRTYPE, 0o755, 0, now))
        for name, data in found:
            tar.addfile(_info(name, tarfile.REGTYPE, 0o644, len(data), now), io.BytesIO(data))
        body = stamp_body.encode()
        tar.addfile(_info(stamp, tarfile.REGTYPE, 0o644, len(body), now), io.BytesIO(body))
    return out.getvalue()
