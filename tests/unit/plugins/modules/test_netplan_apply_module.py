"""rdmaops.cluster.netplan_apply run by ansible itself on the local machine (no netplan needed)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..conftest import ad_hoc


def run_module(args: dict[str, object], *extra: str, path_prefix: str = "") -> dict[str, object]:
    path = f"{path_prefix}:{os.environ['PATH']}" if path_prefix else os.environ["PATH"]
    callback = {"ANSIBLE_LOAD_CALLBACK_PLUGINS": "1", "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json"}
    proc = ad_hoc("rdmaops.cluster.netplan_apply", json.dumps(args), *extra, PATH=path, **callback)
    return dict(json.loads(proc.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"])


def test_check_mode_reports_diff_and_writes_nothing(tmp_path: Path) -> None:
    dest = tmp_path / "60-rdmaops-mesh.yaml"
    result = run_module({"dest": str(dest), "content": "network:\n  version: 2\n"}, "--check", "--diff")
    assert result["changed"] is True
    diff = result["diff"]
    assert isinstance(diff, dict) and diff["after"] == "network:\n  version: 2\n"
    assert diff["before_header"] == "(absent)"
    assert not dest.exists()


def test_failed_generate_removes_the_new_file(tmp_path: Path) -> None:
    # A netplan that rejects every file, as `netplan generate` does a bad one (rc 1, message on stderr).
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "netplan").write_text(
        "#!/bin/sh\necho \"$0: Error in network definition: invalid boolean value 'maybe'\" >&2\nexit 1\n"
    )
    (fake / "netplan").chmod(0o755)
    # networkctl only records that the restore reloaded (never touch the host's networkd).
    (fake / "networkctl").write_text(f'#!/bin/sh\necho "$@" >> {tmp_path}/networkctl.log\n')
    (fake / "networkctl").chmod(0o755)
    dest = tmp_path / "60-rdmaops-mesh.yaml"
    result = run_module({"dest": str(dest), "content": "network:\n  version: 2\n"}, path_prefix=str(fake))
    assert result.get("failed") is True
    assert "netplan generate rejected the new" in str(result["msg"])
    assert "invalid boolean value 'maybe'" in str(result["msg"])
    assert (tmp_path / "networkctl.log").read_text() == "reload\n"
    assert result["rolled_back"] is True
    assert not dest.exists()


def test_unchanged_file_is_not_touched(tmp_path: Path) -> None:
    dest = tmp_path / "60-rdmaops-mesh.yaml"
    dest.write_text("network:\n  version: 2\n")
    dest.chmod(0o600)
    before = dest.stat().st_mtime_ns
    result = run_module({"dest": str(dest), "content": "network:\n  version: 2\n"})
    assert result["changed"] is False and "failed" not in result
    assert dest.stat().st_mtime_ns == before
