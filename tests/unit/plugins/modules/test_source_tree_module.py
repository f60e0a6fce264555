"""rdmaops.cluster.source_tree run by ansible itself on the local machine: the tar, the stamp, check mode."""

from __future__ import annotations

import json
from pathlib import Path

from ..conftest import ad_hoc


def run(files: list[str], dest: Path, *extra: str) -> dict[str, object]:
    callback = {"ANSIBLE_LOAD_CALLBACK_PLUGINS": "1", "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json"}
    args = json.dumps({"files": files, "dest": str(dest)})
    proc = ad_hoc("rdmaops.cluster.source_tree", args, *extra, **callback)
    assert proc.stdout, proc.stderr
    return dict(json.loads(proc.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"])


def test_copies_once_then_only_what_changed_and_check_mode_writes_nothing(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.c").write_text("int a;\n")
    (src / "b.h").write_text("#pragma once\n")
    files = [str(src / "a.c"), str(src / "b.h")]
    dest = tmp_path / "node" / "src"

    first = run(files, dest, "--check", "--diff")
    assert first["changed"] is True and first["stamp"] == "" and first["files"] == ["a.c", "b.h"]
    assert not dest.exists()

    copied = run(files, dest)
    assert copied["changed"] is True, copied
    assert (dest / "a.c").read_text() == "int a;\n" and oct((dest / "b.h").stat().st_mode & 0o777) == "0o644"
    stamp = (dest / ".rdmaops-source-digest").read_text().splitlines()
    assert stamp[0] == copied["digest"] and [line.split("  ")[1] for line in stamp[1:]] == ["a.c", "b.h"]

    again = run(files, dest)
    assert again["changed"] is False and again["stamp"] == copied["digest"]

    (src / "a.c").write_text("int a = 2;\n")
    checked = run(files, dest, "--check", "--diff")
    assert checked["changed"] is True and (dest / "a.c").read_text() == "int a;\n"
    diff = checked["diff"]
    assert isinstance(diff, dict)
    # the stamp's lines that change: the digest and the edited file's, not the other file's
    changed = set(diff["before"].splitlines()) ^ set(diff["after"].splitlines())
    assert {line.split("  ")[-1] for line in changed if "  " in line} == {"a.c"} and len(changed) == 4
    edited = run(files, dest)
    assert edited["changed"] is True and (dest / "a.c").read_text() == "int a = 2;\n"
    assert edited["stamp"] == copied["digest"] and edited["digest"] != copied["digest"]


def test_a_bad_entry_fails_before_anything_is_written(tmp_path: Path) -> None:
    dest = tmp_path / "dest"
    result = run([str(tmp_path / "missing.c")], dest)
    assert result.get("failed") is True
    assert "cannot read" in str(result["msg"]) and "missing.c" in str(result["msg"])
    assert not dest.exists()
