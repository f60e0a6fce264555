# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What lets a no-change run skip work: a digest of a source tree, and the pins a venv does not meet yet.

They run on the controller (through the filters tree_digest and missing_packages, and python_env's plan) on
data that is cheap to get from a node: a stamp file's content, ``dpkg-query``'s status lines, and
``importlib.metadata``'s name -> version map of a venv (no pip run, no resolution).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

# ansible-core requires packaging on the controller, where the filters run; sanity's import test lacks it
try:
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.version import InvalidVersion, Version

    PACKAGING_ERROR: ImportError | None = None
except ImportError as exc:  # pragma: no cover - only without packaging
    PACKAGING_ERROR = exc


class StampError(ValueError):
    """A bad input, named."""


def entries(tree: Iterable[Any]) -> list[tuple[str, Path]]:
    """(name on the node, file on the controller) for every file of ``tree``.

    An entry is a path (its name is its basename) or a mapping of community.general.filetree's
    (``path``, ``src``, ``state``): directories and links carry no content and are left out.
    """
    out: dict[str, Path] = {}
    for item in tree:
        if isinstance(item, Mapping):
            if item.get("state", "file") != "file":
                continue
            name, src = str(item.get("path", "")), str(item.get("src", ""))
        elif isinstance(item, str):
            name, src = Path(item).name, item
        else:
            raise StampError(f"tree_digest: entry {item!r} is neither a path nor a filetree mapping")
        if not name or not src:
            raise StampError(f"tree_digest: entry {item!r} has no path or src")
        if name in out:
            raise StampError(f"tree_digest: {name!r} appears twice ({out[name]} and {src})")
        out[name] = Path(src)
    return sorted(out.items())


def read_tree(tree: Iterable[Any], what: str = "tree_digest") -> list[tuple[str, bytes]]:
    """(name on the node, content) of every file of ``tree``, sorted by name; raises StampError naming a file
    that cannot be read."""
    out = []
    for name, src in entries(tree):
        try:
            out.append((name, src.read_bytes()))
        except OSError as exc:
            raise StampError(f"{what}: cannot read {src}: {exc.strerror}") from exc
    return out


def content_digest(files: Iterable[tuple[str, bytes]]) -> str:
    """sha256 of the sorted (name, content) pairs: any rename, addition, removal or edit changes it."""
    h = hashlib.sha256()
    for name, data in files:
        h.update(name.encode() + b"\0" + str(len(data)).encode() + b"\0" + data)
    return h.hexdigest()


def tree_digest(tree: Iterable[Any]) -> str:
    """content_digest of the files of ``tree`` as they are on the controller now."""
    return content_digest(read_tree(tree))


def normalize_name(name: str) -> str:
    """PEP 503: pip treats PyYAML, pyyaml and py_yaml as one distribution."""
    return re.sub(r"[-_.]+", "-", name).lower()


def unmet_requirements(requirements: Iterable[str], installed: Mapping[str, str]) -> list[str]:
    """The requirements (as given) that ``installed`` (distribution name -> version) does not satisfy.

    The version test is pip's: ``==2.13.0`` accepts ``2.13.0+cpu``, ``==2.13.0+cpu`` does not accept
    ``2.13.0+cu130``; pre-releases are accepted when pinned.
    """
    if PACKAGING_ERROR is not None:
        raise StampError(f"unmet_requirements: the Python package 'packaging' is missing ({PACKAGING_ERROR})")
    have = {normalize_name(k): str(v) for k, v in installed.items()}
    out = []
    for line in requirements:
        try:
            req = Requirement(str(line).strip())
        except InvalidRequirement as exc:
            raise StampError(f"unmet_requirements: {line!r} is not a requirement: {exc}") from exc
        version = have.get(normalize_name(req.name))
        if version is None:
            out.append(str(line).strip())
            continue
        try:
            Version(version)
        except InvalidVersion:
            out.append(str(line).strip())  # an unparseable installed version cannot be shown to match
            continue
        if req.specifier and not req.specifier.contains(version, prereleases=True):
            out.append(str(line).strip())
    return out


def missing_packages(wanted: Iterable[str], dpkg_lines: Iterable[str]) -> list[str]:
    """The packages of ``wanted`` that dpkg does not list as installed, in the order given, once each.

    ``dpkg_lines`` is the output of ``dpkg-query -W -f='${Package} ${db:Status-Status}\\n' PKG...``: a
    package that was removed but not purged reads ``config-files``, one that was never installed is not
    listed (dpkg-query says so on stderr). Virtual package names are never listed: name real packages.
    """
    installed: set[str] = set()
    for line in dpkg_lines:
        if not isinstance(line, str):
            raise StampError(f"dpkg-query line {line!r} is not a string")
        parts = line.split()
        if len(parts) == 2 and parts[1] == "installed":
            # dpkg prints multi-arch packages without the :arch a caller may have written
            installed.add(parts[0])
    out: list[str] = []
    for name in wanted:
        if not isinstance(name, str) or not name.strip():
            raise StampError(f"package name {name!r} is not a non-empty string")
        if name.split(":", 1)[0] not in installed and name not in out:
            out.append(name)
    return out
