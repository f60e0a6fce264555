"""Xid lines from the kernel log, classified by NVIDIA's catalogue."""

from __future__ import annotations

from ansible_collections.rdmaops.cluster.plugins.module_utils.node.health import gpu, xid

from .conftest import HEALTH, collect, thresholds

REAL_DMESG = (HEALTH / "dmesg-nvrm.h200x4.txt").read_text()
PUBLISHED = (HEALTH / "xid-lines.published.txt").read_text()


def test_recorded_nvrm_lines_hold_no_xid() -> None:
    assert "NVRM:" in REAL_DMESG
    assert xid.parse_kernel_log(REAL_DMESG) == []


def test_published_line_formats() -> None:
    events = xid.parse_kernel_log(PUBLISHED)
    assert [(e["xid"], e["pci"], e["ts"]) for e in events] == [
        (79, "0000:2b:00", None),
        (79, "0000:10:00", None),
        (63, "0000:10:1c", None),
        (3, "0000:01:00", 269.517039),
    ]
    assert events[1]["text"] == "pid=0, GPU has fallen off the bus."


def test_catalogue_buckets() -> None:
    assert xid.classify(79) == ("RESTART_BM", "fail")
    assert xid.classify(48) == ("WORKFLOW_XID_48", "fail")
    assert xid.classify(95) == ("RESET_GPU", "fail")
    assert xid.classify(145) == ("WORKFLOW_NVLINK5_ERR", "fail")
    assert xid.classify(13) == ("RESTART_APP", "warn")
    assert xid.classify(94) == ("RESTART_APP", "warn")
    assert xid.classify(63) == ("IGNORE", None)
    assert xid.classify(3) == ("NOT_IN_CATALOGUE", "warn")
    assert "reboot the node" in xid.describe(79) and "fallen off the bus" in xid.describe(79)


def inject(*lines: str) -> str:
    """A copy of the recorded dmesg with Xid lines appended in its format (time stamps, H200 bus ids)."""
    return REAL_DMESG + "".join(f"[ {100.0 + i:.6f}] {text}\n" for i, text in enumerate(lines))


def test_xid_79_fails_and_names_the_gpu_and_action() -> None:
    log = inject(
        "NVRM: Xid (PCI:0000:00:07): 79, pid=0, GPU has fallen off the bus.",
        "NVRM: Xid (PCI:0000:00:07): 79, pid=0, GPU has fallen off the bus.",
    )
    (f,) = collect(gpu.check_xids, xid.parse_kernel_log(log), thresholds())
    assert (f["check"], f["subject"], f["value"], f["severity"]) == (
        "gpu.xid",
        "GPU 0000:00:07",
        "Xid 79 x2",
        "fail",
    )
    assert "RMA" in f["message"] and "GPU has fallen off the bus." in f["message"]


def test_app_xid_warns_ignored_xid_is_dropped_and_ignore_list_works() -> None:
    log = inject(
        "NVRM: Xid (PCI:0000:00:06): 13, pid=4242, name=python3, Graphics Exception: ESR 0x514648=0x1000f",
        "NVRM: Xid (PCI:0000:00:08): 63, pid=1896, Row Remapper: New row marked for remapping, "
        "reset gpu to activate.",
    )
    events = xid.parse_kernel_log(log)
    (f,) = collect(gpu.check_xids, events, thresholds())
    assert (f["value"], f["severity"]) == ("Xid 13 x1", "warn")
    assert collect(gpu.check_xids, events, thresholds(gpu_xid_ignore=[13])) == []
    # An operator may make every Xid a failure.
    (hard,) = collect(gpu.check_xids, events, thresholds(), severity={"gpu.xid": "fail"})
    assert hard["severity"] == "fail"
