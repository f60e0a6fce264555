"""The tar source_tree sends: what it holds, in which order, with which modes, and the entries it refuses."""

from __future__ import annotations

import hashlib
import io
import tarfile
from pathlib import Path

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils.site import source_tree as st
from ansible_collections.rdmaops.cluster.plugins.module_utils.site.digests import StampError, tree_digest


def _tree(root: Path) -> list[dict[str, str]]:
    (root / "pkg" / "sub").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "sub" / "mod.py").write_text("x = 1\n")
    (root / "pyproject.toml").write_text("[project]\n")
    return [
        {"path": "pkg", "src": str(root / "pkg"), "state": "directory"},
        {"path": "pkg/sub/mod.py", "src": str(root / "pkg" / "sub" / "mod.py"), "state": "file"},
        {"path": "pkg/__init__.py", "src": str(root / "pkg" / "__init__.py"), "state": "file"},
        {"path": "pyproject.toml", "src": str(root / "pyproject.toml"), "state": "file"},
    ]


def test_the_tar_holds_directories_then_files_then_the_stamp(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    digest, found = st.plan(tree, ".stamp")
    assert digest == tree_digest(tree)
    assert [name for name, _src in found] == ["pkg/__init__.py", "pkg/sub/mod.py", "pyproject.toml"]
    body = st.stamp_text(digest, found)
    sums = {name: hashlib.sha256((tmp_path / name).read_bytes()).hexdigest() for name, _src in found}
    assert body.splitlines() == [digest] + [f"{sums[name]}  {name}" for name, _src in found]
    assert st.stamp_digest(body) == digest
    with tarfile.open(fileobj=io.BytesIO(st.archive(found, body, ".stamp", now=1.7e9))) as tar:
        members = tar.getmembers()
        assert [(m.name, m.isdir(), oct(m.mode)) for m in members] == [
            ("pkg", True, "0o755"),
            ("pkg/sub", True, "0o755"),
            ("pkg/__init__.py", False, "0o644"),
            ("pkg/sub/mod.py", False, "0o644"),
            ("pyproject.toml", False, "0o644"),
            (".stamp", False, "0o644"),
        ]
        assert {(m.uid, m.gid, m.uname, m.mtime) for m in members} == {(0, 0, "root", 1_700_000_000)}
        stamp = tar.extractfile(".stamp")
        mod = tar.extractfile("pkg/sub/mod.py")
        assert stamp is not None and stamp.read() == body.encode()
        assert mod is not None and mod.read() == b"x = 1\n"


def test_plain_paths_go_under_their_base_name(tmp_path: Path) -> None:
    (tmp_path / "a.c").write_text("int a;\n")
    (tmp_path / "Makefile").write_text("all:\n")
    found = st.plan([str(tmp_path / "a.c"), str(tmp_path / "Makefile")], ".rdmaops-source-digest")[1]
    assert [name for name, _src in found] == ["Makefile", "a.c"]


@pytest.mark.parametrize(
    "entry,message",
    [
        ({"path": "../escape.py", "src": "/etc/hostname"}, "'../escape.py' is not a plain relative path"),
        ({"path": "/etc/passwd", "src": "/etc/hostname"}, "'/etc/passwd' is not a plain relative path"),
        ({"path": "a//b.py", "src": "/etc/hostname"}, "'a//b.py' is not a plain relative path"),
        ({"path": ".stamp", "src": "/etc/hostname"}, "'.stamp' is the stamp's own name"),
        ({"path": "gone.py", "src": "/nonexistent/gone.py"}, "cannot read /nonexistent/gone.py"),
    ],
)
def test_bad_entries_are_refused_by_name(entry: dict[str, str], message: str) -> None:
    with pytest.raises(StampError, match=message.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        st.plan([entry], ".stamp")


def test_an_empty_tree_and_a_stamp_outside_dest_are_refused(tmp_path: Path) -> None:
    with pytest.raises(StampError, match="no files to copy"):
        st.plan([{"path": "d", "src": str(tmp_path), "state": "directory"}], ".stamp")
    (tmp_path / "f").write_text("")
    with pytest.raises(StampError, match=r"'\.\./stamp' is not a plain relative path"):
        st.plan([str(tmp_path / "f")], "../stamp")


def test_a_stamp_of_an_older_copy_is_its_digest_alone() -> None:
    assert st.stamp_digest("cb0c5fa1\n") == "cb0c5fa1"
    assert st.stamp_digest("") == ""
