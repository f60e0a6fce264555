"""tree_digest and missing_packages: how nccl_mesh_plugin and the roles that install packages skip work on a
no-change run."""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.rdmaops.cluster.plugins.filter.stamps import FilterModule

from ..conftest import ROOT

FILTERS = FilterModule().filters()
digest = FILTERS["tree_digest"]


def test_filters_have_doc_files() -> None:
    for name in FILTERS:
        assert (ROOT / "plugins" / "filter" / f"{name}.yml").is_file(), name


def _tree(root: Path) -> list[dict[str, str]]:
    # community.general.filetree's entries, directories included
    out = [{"path": "pkg", "src": str(root / "pkg"), "state": "directory"}]
    for p in sorted(root.rglob("*")):
        if p.is_file():
            out.append({"path": str(p.relative_to(root)), "src": str(p), "state": "file"})
    return out


def test_tree_digest_changes_with_content_names_and_membership(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("x = 1\n")
    (tmp_path / "pkg" / "b.py").write_text("y = 2\n")
    first = digest(_tree(tmp_path))
    assert len(first) == 64 and digest(_tree(tmp_path)) == first
    assert digest(list(reversed(_tree(tmp_path)))) == first  # order of the listing does not matter
    (tmp_path / "pkg" / "a.py").write_text("x = 2\n")
    edited = digest(_tree(tmp_path))
    assert edited != first
    (tmp_path / "pkg" / "a.py").rename(tmp_path / "pkg" / "c.py")
    assert digest(_tree(tmp_path)) not in (first, edited)
    (tmp_path / "pkg" / "c.py").write_text("x = 2\n")
    (tmp_path / "pkg" / "d.py").write_text("")
    with_empty = digest(_tree(tmp_path))
    (tmp_path / "pkg" / "d.py").unlink()
    assert digest(_tree(tmp_path)) != with_empty  # an added empty file counts


def test_tree_digest_of_plain_paths_and_the_plugin_sources(tmp_path: Path) -> None:
    srcs = sorted(str(p) for p in (ROOT / "files" / "plugin_src").glob("*.[ch]"))
    assert digest(srcs) == digest(list(reversed(srcs)))
    # plain paths are named by their basename: the same bytes elsewhere under the same name digest alike,
    # under another name differently
    first = Path(srcs[0])
    (tmp_path / first.name).write_bytes(first.read_bytes())
    (tmp_path / "renamed.c").write_bytes(first.read_bytes())
    assert digest([str(tmp_path / first.name)]) == digest([str(first)])
    assert digest([str(tmp_path / "renamed.c")]) != digest([str(first)])


@pytest.mark.parametrize(
    ("tree", "message"),
    [
        ("files/trainer", "expected a list of files"),
        ([{"path": "a.py", "state": "file"}], "has no path or src"),
        ([42], "neither a path nor a filetree mapping"),
        (["/nonexistent/a.c"], "cannot read /nonexistent/a.c"),
    ],
)
def test_tree_digest_names_bad_input(tree: object, message: str) -> None:
    with pytest.raises(AnsibleFilterError, match=message):
        digest(tree)


def test_tree_digest_refuses_two_files_of_one_name(tmp_path: Path) -> None:
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "same.c").write_text(d)
    with pytest.raises(AnsibleFilterError, match=r"'same\.c' appears twice"):
        digest([str(tmp_path / "a" / "same.c"), str(tmp_path / "b" / "same.c")])


missing = FILTERS["missing_packages"]

# What dpkg-query -W -f='${Package} ${db:Status-Status}\n' prints on Debian 12 for an installed package, one
# removed without purge, and (nothing on stdout) one never installed.
DPKG_LINES = ["rdma-core installed", "perftest config-files", "ibverbs-utils installed"]


def test_missing_packages_reads_dpkg_status() -> None:
    wanted = ["rdma-core", "perftest", "infiniband-diags", "ibverbs-utils", "infiniband-diags"]
    assert missing(wanted, DPKG_LINES) == ["perftest", "infiniband-diags"]
    assert missing(["rdma-core", "ibverbs-utils:amd64"], DPKG_LINES) == []
    assert missing(["rdma-core"], []) == ["rdma-core"]
    assert missing("rdma-core", "rdma-core installed\n") == []


def test_missing_packages_names_bad_input() -> None:
    with pytest.raises(AnsibleFilterError, match="package name '' is not"):
        missing(["rdma-core", ""], DPKG_LINES)
    with pytest.raises(AnsibleFilterError, match="dpkg-query line 3"):
        missing(["rdma-core"], [3])
