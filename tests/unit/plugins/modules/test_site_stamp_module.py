"""The site_stamp module end to end: check mode writes nothing, a record then a check, a change named."""

from __future__ import annotations

import json
from pathlib import Path

from ansible_collections.rdmaops.cluster.plugins.modules import site_stamp

from ..conftest import RunModule


def test_record_then_check_then_a_change(run_module: RunModule, tmp_path: Path) -> None:
    conf = tmp_path / "nccl.conf"
    conf.write_text("NCCL_IB_DISABLE=1\n")
    stamp = tmp_path / "state" / "site-stamp.json"
    watch = {"nccl_env": {"files": [str(conf)]}}
    args = {"path": str(stamp), "digest": "d1", "watch": watch}

    out = run_module(site_stamp, state="present", _ansible_check_mode=True, **args)
    assert out["changed"] is True and not stamp.exists()
    out = run_module(site_stamp, state="present", **args)
    assert out["changed"] is True and json.loads(stamp.read_text())["digest"] == "d1"
    assert out["watched"]["files"] == 1
    assert run_module(site_stamp, state="present", **args)["changed"] is False

    out = run_module(site_stamp, path=str(stamp), digest="d1")
    assert out == {**out, "changed": False, "current": True, "reasons": []}
    conf.write_text("NCCL_IB_DISABLE=0\n")
    out = run_module(site_stamp, path=str(stamp), digest="d1")
    assert out["current"] is False and out["reasons"] == [f"nccl_env: {conf} changed"]


def test_bad_watch_is_named(run_module: RunModule, tmp_path: Path) -> None:
    out = run_module(
        site_stamp,
        state="present",
        path=str(tmp_path / "s"),
        digest="d",
        watch={"rdma": {"file": []}},
    )
    assert out["failed"] is True and "unknown kind 'file'" in out["msg"]
    assert not (tmp_path / "s").exists()
