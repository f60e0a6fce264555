"""The Slurm HealthCheckProgram: drain/resume decisions, and files/health/rdmaops-health run as a subprocess
with a fake scontrol (and a fake nvidia-smi) on PATH that record their argv."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils.node.health import cli

from ....conftest import ROOT
from .conftest import HEALTH, SMI_XML, edit_gpu

SCRIPT = ROOT / "files" / "health" / "rdmaops-health"

# What `scontrol -o show node` prints, in the field order of Slurm's src/api/node_info.c.
SHOW = (
    "NodeName=node1 Arch=x86_64 CoresPerSocket=1 CPUAlloc=0 CPUEfctv=2 CPUTot=2 CPULoad=0.01 "
    "AvailableFeatures=(null) ActiveFeatures=(null) Gres=gpu:4 NodeAddr=10.99.0.11 NodeHostName=node1 "
    "Version=22.05.8 OS=Linux 6.18.0 #1 SMP RealMemory=7900 AllocMem=0 FreeMem=7012 Sockets=2 Boards=1 "
    "State={state} ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A Partitions=gpu "
    "BootTime=2026-11-27T04:50:02 SlurmdStartTime=2026-11-27T04:51:10 LastBusyTime=2026-11-27T04:51:10 "
    "ResumeAfterTime=None CfgTRES=cpu=2,mem=7900M,billing=2 AllocTRES= CurrentWatts=0 AveWatts=0{reason}"
)

FAKE_SCONTROL = r"""
import json, os, sys
args = sys.argv[1:]
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write(json.dumps(["scontrol"] + args) + "\n")
with open(os.environ["FAKE_NODE"]) as fh:
    node = json.load(fh)
if args[:3] == ["-o", "show", "node"]:
    reason = " Reason=%s [root@2026-11-27T05:40:00]" % node["reason"] if node["reason"] else ""
    print(os.environ["FAKE_SHOW"].format(state=node["state"], reason=reason))
elif args[0] == "update":
    kv = dict(a.split("=", 1) for a in args[1:])
    if kv["State"] == "DRAIN":
        node = {"state": "IDLE+DRAIN", "reason": kv["Reason"]}
    elif kv["State"] == "RESUME":
        node = {"state": "IDLE", "reason": ""}
    with open(os.environ["FAKE_NODE"], "w") as fh:
        json.dump(node, fh)
"""

FAKE_SMI = r"""
import json, os, sys
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write(json.dumps(["nvidia-smi"] + sys.argv[1:]) + "\n")
with open(os.environ["FAKE_SMI_XML"]) as fh:
    sys.stdout.write(fh.read())
"""


def test_parse_show_node() -> None:
    assert cli.parse_show_node(SHOW.format(state="IDLE", reason="")) == ("IDLE", "")
    line = SHOW.format(
        state="MIXED+DRAIN", reason=" Reason=rdmaops-health: gpu.xid x [root@2026-11-27T05:40:00]"
    )
    assert cli.parse_show_node(line) == ("MIXED+DRAIN", "rdmaops-health: gpu.xid x")
    with_comment = SHOW.format(
        state="DOWN+DRAIN", reason=" Reason=Not responding [slurm@2026-11-27T05:00:00]"
    )
    assert cli.parse_show_node(with_comment + " Comment=rack 3") == ("DOWN+DRAIN", "Not responding")


FAIL = {
    "check": "gpu.ecc_volatile",
    "subject": "GPU 1 (00000000:00:07.0)",
    "message": "2 uncorrectable ECC errors",
    "value": 2,
    "threshold": 0,
    "severity": "fail",
    "node": "node1",
}


@pytest.mark.parametrize(
    ("fails", "state", "reason", "action"),
    [
        ([FAIL], "IDLE", "", "drain"),
        ([FAIL], "IDLE+DRAIN", cli.drain_reason([FAIL]), None),  # already drained for this
        ([FAIL], "IDLE+DRAIN", "rdmaops-health: gpu.xid GPU 0: older", "drain"),  # a new reason of ours
        ([FAIL], "DRAINED", "maintenance until Monday", None),  # an administrator's drain stays
        ([], "IDLE+DRAIN", "rdmaops-health: gpu.xid GPU 0: older", "resume"),
        ([], "IDLE+DRAIN", "maintenance until Monday", None),
        ([], "IDLE", "", None),
    ],
)
def test_slurm_action(fails: list, state: str, reason: str, action: str | None) -> None:
    assert cli.slurm_action(fails, state, reason)[0] == action


def test_drain_reason_is_short_and_counts_the_rest() -> None:
    text = cli.drain_reason([FAIL, FAIL, FAIL])
    assert text == (
        "rdmaops-health: gpu.ecc_volatile GPU 1 (00000000:00:07.0): 2 uncorrectable ECC errors "
        "(value 2, threshold 0); +2 more"
    )
    long = dict(FAIL, message="x" * 500)
    assert len(cli.drain_reason([long])) == cli.REASON_MAX


@pytest.fixture
def slurm(tmp_path: Path):
    """Run the script with fake scontrol and nvidia-smi first on PATH: run(xml, node_state) -> result."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # -S: no site-packages, which is also all the script may rely on (and keeps each start fast).
    shebang = f"#!{sys.executable} -S"
    (bin_dir / "scontrol").write_text(shebang + FAKE_SCONTROL)
    (bin_dir / "nvidia-smi").write_text(shebang + FAKE_SMI)
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    log, node_file, xml = tmp_path / "argv.log", tmp_path / "node.json", tmp_path / "smi.xml"
    node_file.write_text(json.dumps({"state": "IDLE", "reason": ""}))
    (tmp_path / "chrony").write_text((HEALTH / "chronyc-tracking.synced.txt").read_text())
    (tmp_path / "dmesg").write_text((HEALTH / "dmesg-nvrm.h200x4.txt").read_text())
    env = dict(
        os.environ,
        PATH=f"{bin_dir}:{os.environ['PATH']}",
        FAKE_LOG=str(log),
        FAKE_NODE=str(node_file),
        FAKE_SHOW=SHOW,
        FAKE_SMI_XML=str(xml),
    )
    # What slurmd runs: the bare program; everything else comes from the config file.
    config = {
        "node": "node1",
        "slurm": True,
        "state_file": str(tmp_path / "state.json"),
        "sysfs_root": str(tmp_path),
        "thresholds": {"gpu_count": 4, "gpu_dcgm_level": 0},
        "sources": {"chronyc": str(tmp_path / "chrony"), "kernel_log": str(tmp_path / "dmesg")},
    }
    (tmp_path / "health.json").write_text(json.dumps(config))
    argv = [sys.executable, "-S", str(SCRIPT), "--config", str(tmp_path / "health.json")]

    def run(smi_xml: str, node_state: dict | None = None) -> tuple[subprocess.CompletedProcess, list, dict]:
        xml.write_text(smi_xml)
        if node_state is not None:
            node_file.write_text(json.dumps(node_state))
        log.write_text("")
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=False)
        calls = [json.loads(x) for x in log.read_text().splitlines()]
        return proc, calls, json.loads(node_file.read_text())

    return run


def test_script_drains_on_failure_and_resumes_when_passing(slurm) -> None:
    sick = edit_gpu(SMI_XML, 1, "<dram_uncorrectable>0<", "<dram_uncorrectable>2<")
    proc, calls, node = slurm(sick)
    assert proc.returncode == 0, proc.stderr  # drained: slurmd must not be kept from registering
    assert "node1: gpu.ecc_volatile [fail] GPU 1 (00000000:00:07.0)" in proc.stdout
    reason = (
        "rdmaops-health: gpu.ecc_volatile GPU 1 (00000000:00:07.0): 2 uncorrectable ECC errors "
        "(volatile, since the driver loaded) (value 2, threshold 0)"
    )
    assert calls == [
        ["nvidia-smi", "-q", "-x"],
        ["scontrol", "-o", "show", "node", "node1"],
        ["scontrol", "update", "NodeName=node1", "State=DRAIN", f"Reason={reason}"],
    ]
    assert node == {"state": "IDLE+DRAIN", "reason": reason}

    # Healthy again: resumed, with the old reason in the output.
    proc, calls, node = slurm(SMI_XML)
    assert proc.returncode == 0, proc.stderr
    assert ["scontrol", "update", "NodeName=node1", "State=RESUME"] in calls
    assert node == {"state": "IDLE", "reason": ""} and "resumed node1" in proc.stdout


def test_script_leaves_an_administrators_drain_alone(slurm) -> None:
    admin = {"state": "IDLE+DRAIN", "reason": "maintenance until Monday"}
    sick = edit_gpu(SMI_XML, 0, "<remapped_row_failure>No<", "<remapped_row_failure>Yes<")
    proc, calls, node = slurm(sick, admin)
    assert proc.returncode == 0 and node == admin and "nothing to change" in proc.stdout
    assert calls[-1] == ["scontrol", "-o", "show", "node", "node1"]


def test_bad_threshold_is_refused_before_anything_runs(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--config", "", "--threshold", "gpu_count=-1", "--severity", "gpu.xid=loud"]) == 2
    err = capsys.readouterr().err
    assert "gpu_count: -1 is negative" in err and "severity.gpu.xid: 'loud'" in err


def test_exit_status_without_and_with_a_failing_scontrol(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    sick = tmp_path / "sick.xml"
    sick.write_text(edit_gpu(SMI_XML, 3, "<current_link_width>16x<", "<current_link_width>8x<"))
    common = [
        "--config",
        "",
        "--node",
        "node1",
        "--state-file",
        "",
        "--sysfs-root",
        str(tmp_path),
        "--threshold",
        "gpu_dcgm_level=0",
        "--source",
        f"kernel_log={HEALTH / 'dmesg-nvrm.h200x4.txt'}",
        "--source",
        f"chronyc={HEALTH / 'chronyc-tracking.synced.txt'}",
    ]
    assert cli.main([*common, "--source", f"nvidia_smi={HEALTH / 'nvidia-smi-q-x.h200x4.xml'}"]) == 0
    assert cli.main([*common, "--source", f"nvidia_smi={sick}", "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert [f["check"] for f in out["findings"]] == ["gpu.pcie_width"] and out["ok"] is False
    broken = tmp_path / "bin"
    broken.mkdir()
    (broken / "scontrol").write_text(
        f"#!{sys.executable} -S\nimport sys\n"
        "sys.stderr.write('slurm_load_node error: Unable to contact slurm controller\\n')\nsys.exit(1)\n"
    )
    (broken / "scontrol").chmod(0o755)
    monkeypatch.setenv("PATH", f"{broken}:{os.environ['PATH']}")
    assert cli.main([*common, "--source", f"nvidia_smi={sick}", "--slurm"]) == 3
    assert "Unable to contact slurm controller" in capsys.readouterr().err
    # The config turns Slurm mode on for slurmd's runs; --no-slurm only reports.
    config = tmp_path / "health.json"
    config.write_text(json.dumps({"slurm": True}))
    args = [*common[2:], "--config", str(config), "--source", f"nvidia_smi={sick}"]
    assert cli.main(args) == 3
    assert cli.main([*args, "--no-slurm"]) == 1
