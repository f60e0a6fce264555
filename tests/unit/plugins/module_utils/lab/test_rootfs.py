"""Files written inside a node's root (plugins/module_utils/lab/rootfs.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils.lab import host as lab_host
from ansible_collections.rdmaops.cluster.plugins.module_utils.lab import plan as lab_plan
from ansible_collections.rdmaops.cluster.plugins.module_utils.lab import rootfs as lab_rootfs


def test_render_block_replaces_only_its_block() -> None:
    marker = "rdmaops.cluster.lab management addresses"
    first = lab_rootfs.render_block("127.0.0.1 localhost\n", "10.99.0.11 node1\n", marker)
    assert first == (f"127.0.0.1 localhost\n# BEGIN {marker}\n10.99.0.11 node1\n# END {marker}\n")
    edited = first + "10.255.0.1 node1-addr\n"
    second = lab_rootfs.render_block(edited, "10.99.0.11 node1\n10.99.0.14 node4", marker)
    assert second == (
        "127.0.0.1 localhost\n"
        f"# BEGIN {marker}\n10.99.0.11 node1\n10.99.0.14 node4\n# END {marker}\n"
        "10.255.0.1 node1-addr\n"
    )
    assert lab_rootfs.render_block(second, "10.99.0.11 node1\n10.99.0.14 node4\n", marker) == second
    assert lab_rootfs.render_block("no newline", "x\n", "m") == "no newline\n# BEGIN m\nx\n# END m\n"


def test_write_root_file_changes_only_what_differs(tmp_path: Path) -> None:
    host = lab_host.Host("unit", runner=lambda argv: (0, "", ""))
    lab_rootfs.write_root_file(host, str(tmp_path), "/etc/hostname", "node1\n", 0o644, None)
    assert (tmp_path / "etc/hostname").read_text() == "node1\n"
    assert oct((tmp_path / "etc/hostname").stat().st_mode & 0o7777) == oct(0o644)
    assert len(host.changes) == 1
    lab_rootfs.write_root_file(host, str(tmp_path), "/etc/hostname", "node1\n", 0o644, None)
    assert len(host.changes) == 1
    lab_rootfs.write_root_file(host, str(tmp_path), "/etc/hostname", "node1\n", 0o600, None)
    assert len(host.changes) == 2
    assert oct((tmp_path / "etc/hostname").stat().st_mode & 0o7777) == oct(0o600)


def test_write_root_file_check_mode_and_bad_paths(tmp_path: Path) -> None:
    host = lab_host.Host("unit", runner=lambda argv: (0, "", ""), check_mode=True)
    lab_rootfs.write_root_file(host, str(tmp_path), "/etc/machine-id", "abc\n", 0o444, None)
    assert host.changes == [f"write {tmp_path}/etc/machine-id"]
    assert not (tmp_path / "etc").exists()
    for bad in ("/", "../etc/passwd", "/etc/../../x"):
        with pytest.raises(lab_plan.LabError, match="inside the node's root"):
            lab_rootfs.write_root_file(host, str(tmp_path), bad, "x", 0o644, None)
