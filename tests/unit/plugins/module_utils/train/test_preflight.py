"""train.yml's preflight: node-side readers and the one report over all nodes "
"(module_utils/train_preflight)."""

from __future__ import annotations

import copy
import json
import os
import socket
from pathlib import Path

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils.train import preflight as tp

VERSIONS = {
    "python": "3.11.2",
    "torch": "2.13.0",
    "nccl": None,
    "deepspeed": "0.19.8",
    "trainer": "0.1.0",
    "transformers": "5.23.0",
}
LAUNCH = {
    "job": "tiny",
    "device": "cpu",
    "procs_per_node": 1,
    "nodes": 3,
    "world_size": 3,
    "steps": 30,
    "output_dir_resolved": "/shared/train/tiny/runs/tiny",
}


def node(**change: object) -> dict:
    base = {
        "venv": {"path": "/opt/rdmaops/venv", "exists": True},
        "versions": dict(VERSIONS),
        "gpus": 0,
        "env_file": "/etc/rdmaops/nccl.env",
        "interfaces": {"nodeaddr0": {"exists": True, "up": True, "ipv4": ["10.255.0.1"]}},
        "address": "10.255.0.1",
        "paths": [
            {"what": "data.path", "path": "/d", "exists": True, "files": 1, "bytes": 9, "fingerprint": "ab"}
        ],
        "listening": [],
        "unit": {"Id": "rdmaops-train-tiny.service", "LoadState": "not-found", "ActiveState": "inactive"},
        "disk": ["/shared", 50.0],
        "checkpoints": {"complete": [], "partial": [], "finished_step": None},
        "shared_marker": True,
    }
    base.update(change)
    return base


def report(facts: dict, **kw: object) -> dict:
    args = {
        "launch": LAUNCH,
        "launcher": "torchrun",
        "master_port": 29500,
        "resume": "never",
        "min_free_gb": 1.0,
    }
    args.update(kw)
    return tp.preflight_report(facts, ["node1", "node2", "node3"], **args)  # type: ignore[arg-type]


def healthy() -> dict:
    return {"node1": node(), "node2": node(address="10.255.0.2"), "node3": node(address="10.255.0.3")}


def test_a_healthy_cluster_passes_with_a_shared_output_note() -> None:
    out = report(healthy())
    assert out["errors"] == []
    assert out["notes"] == [
        "output /shared/train/tiny/runs/tiny is shared by all nodes: checkpoints can be resumed on any nodes"
    ]


def test_every_problem_is_reported_at_once_naming_node_value_and_fix() -> None:
    facts = healthy()
    facts["node2"] = {"unreachable": True, "msg": "Failed to connect to the host via ssh: timed out"}
    facts["node3"]["versions"]["torch"] = "2.12.0"
    facts["node3"]["paths"][0]["exists"] = False
    facts["node1"]["listening"] = [29500]
    facts["node1"]["unit"] = {
        "Id": "rdmaops-train-tiny.service",
        "ActiveState": "active",
        "SubState": "running",
    }
    facts["node3"]["interfaces"] = {"nodeaddr0": {"exists": False}}
    facts["node3"]["address"] = ""
    errors = report(facts)["errors"]
    joined = "\n".join(errors)
    assert "node2: unreachable (Failed to connect to the host via ssh: timed out)" in joined
    assert "node3: torch 2.12.0 differs from node1's 2.13.0" in joined
    assert "node3: data.path /d does not exist" in joined
    # the port is the running job's own: named once, as the job
    assert "rendezvous port" not in joined
    assert "job tiny is already running on node1 (rdmaops-train-tiny.service" in joined
    assert "playbooks/train_status.yml -e job=tiny -e follow=true" in joined and "train_stop.yml" in joined
    assert "node3: interface nodeaddr0, named in /etc/rdmaops/nccl.env, does not exist" in joined
    assert len(errors) == 6, errors


def test_a_port_held_by_something_else_is_named() -> None:
    facts = healthy()
    facts["node1"]["listening"] = [29500]
    assert report(facts)["errors"] == [
        "node1: rendezvous port 29500 is already in use there: stop what listens on it (`ss -ltnp`) or pass "
        "-e train_master_port=<another port>"
    ]


def test_a_running_job_is_named_once_not_by_what_it_holds() -> None:
    # a second train.yml while the job runs: its units, its port and its output directory are the job itself
    facts = healthy()
    running = {"Id": "rdmaops-train-tiny.service", "ActiveState": "active", "SubState": "running",
               "ActiveEnterTimestamp": "Sat 2026-11-28 10:00:00 UTC"}  # fmt: skip
    for host in facts:
        facts[host]["unit"] = dict(running)
    facts["node1"]["listening"] = [29500]
    facts["node1"]["checkpoints"] = {"complete": [50], "partial": [], "finished_step": None}
    assert report(facts)["errors"] == [
        "job tiny is already running on node1, node2, node3 (rdmaops-train-tiny.service, since Sat "
        "2026-11-28 "
        "10:00:00 UTC): watch it with ansible-playbook playbooks/train_status.yml -e job=tiny -e "
        "follow=true, "
        "stop it with playbooks/train_stop.yml -e job=tiny, or give this run another -e job=NAME"
    ]


def test_cuda_recipe_needs_the_gpus_on_every_node() -> None:
    launch = {**LAUNCH, "device": "cuda", "procs_per_node": 8, "nodes": 3, "world_size": 24}
    errors = report(healthy(), launch=launch)["errors"]
    assert errors[0] == (
        "node1: 0 GPU(s) visible, the recipe needs cluster.procs_per_node=8 cuda processes per node "
        "(world size 24 = 3 nodes x 8)"
    )
    assert len(errors) == 3


def test_different_data_is_named() -> None:
    facts = healthy()
    facts["node2"]["paths"] = [{**facts["node2"]["paths"][0], "fingerprint": "cd"}]
    assert report(facts)["errors"] == [
        "node2: data.path /d differs from node1's (1 files, 9 bytes): give every node the same copy "
        "(-e sync_data=true copies node1's)"
    ]


def test_sync_data_turns_missing_or_different_copies_into_copies_from_the_first_node() -> None:
    facts = healthy()
    facts["node2"]["paths"] = [{**facts["node2"]["paths"][0], "fingerprint": "cd"}]
    facts["node3"]["paths"] = [{"what": "data.path", "path": "/d", "exists": False}]
    out = report(facts, sync_data=True)
    assert out["errors"] == []
    assert out["sync"] == [
        {"what": "data.path", "path": "/d", "from": "node1", "to": ["node2", "node3"], "bytes": 9}
    ]
    assert "sync_data: data.path /d (1 files, 9 bytes) is copied from node1 to node2, node3" in out["notes"]
    # the same copy everywhere: nothing to copy
    assert report(healthy(), sync_data=True)["sync"] == []
    # missing on the first node: nothing to copy from, named either way
    facts = healthy()
    facts["node1"]["paths"] = [{"what": "data.path", "path": "/d", "exists": False}]
    errors = report(facts, sync_data=True)["errors"]
    assert (
        errors[0].startswith("node1: data.path /d does not exist")
        and "copies from node1, which needs it" in errors[0]
    )
    assert report(facts, sync_data=True)["sync"] == []


def test_output_holding_a_run_needs_resume_or_a_new_job() -> None:
    facts = healthy()
    facts["node1"]["checkpoints"] = {"complete": [10, 20], "partial": [30], "finished_step": None}
    out = report(facts)
    assert out["errors"] == [
        "node1: /shared/train/tiny/runs/tiny already holds a run (checkpoint at step 20): -e resume=latest "
        "continues it; -e job=NEW starts a new one in its own directory; "
        "-e overwrite=true replaces it"
    ]
    out = report(facts, resume="latest")
    assert out["errors"] == []
    assert (
        "checkpoint step_00000030 in /shared/train/tiny/runs/tiny is incomplete (no COMPLETE marker): it "
        "will be skipped" in out["notes"]
    )
    assert (
        "resume=latest: continuing from step 20 (/shared/train/tiny/runs/tiny/checkpoints/step_00000020)"
        in out["notes"]
    )
    out = report(facts, overwrite=True)
    assert out["errors"] == []
    assert (
        "overwrite: the previous run in /shared/train/tiny/runs/tiny is removed before the launch"
        in out["notes"]
    )
    facts["node1"]["checkpoints"]["finished_step"] = 30
    assert "already complete at step 30 of 30" in report(facts, resume="latest")["errors"][0]


def test_node_local_output_says_resume_needs_the_same_nodes() -> None:
    facts = healthy()
    facts["node3"]["shared_marker"] = False
    assert "node3 do not see the master's files" in report(facts)["notes"][0]


def test_fingerprints_checksum_small_files_and_stat_large_ones(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.txt").write_text("hello")
    (tmp_path / "a" / "big.bin").write_bytes(b"\0" * 100)
    one = tp.fingerprint(str(tmp_path / "a"), small=50)
    assert one["exists"] and one["files"] == 2 and one["bytes"] == 105
    (tmp_path / "a" / "x.txt").write_text("hellO")  # same size: only a checksum sees it
    assert tp.fingerprint(str(tmp_path / "a"), small=50)["fingerprint"] != one["fingerprint"]
    os.utime(tmp_path / "a" / "big.bin", (1, 1))  # large file: size and mtime
    assert tp.fingerprint(str(tmp_path / "a"), small=50)["fingerprint"] != one["fingerprint"]
    assert tp.fingerprint(str(tmp_path / "missing")) == {"exists": False}


def test_ifnames_and_interface_state_from_ip_json() -> None:
    env = {"NCCL_SOCKET_IFNAME": "=nodeaddr0", "GLOO_SOCKET_IFNAME": "nodeaddr0"}
    assert tp.parse_ifnames(env) == ["nodeaddr0"]
    assert tp.parse_ifnames({"NCCL_SOCKET_IFNAME": "^docker,lo"}) == []
    links = json.loads(
        '[{"ifindex":5,"ifname":"nodeaddr0","flags":["BROADCAST","MULTICAST","UP"],"operstate":"DOWN",'
        '"addr_info":[{"family":"inet","local":"10.255.0.1","prefixlen":32}]}]'
    )
    assert tp.interface_state(links, ["nodeaddr0", "data9"]) == {
        "nodeaddr0": {"exists": True, "up": True, "ipv4": ["10.255.0.1"]},
        "data9": {"exists": False},
    }


def test_listening_ports_from_proc_net_tcp() -> None:
    tcp = (
        "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
        "   0: 0100FF0A:7344 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0 "
        "100 0\n"
        "   1: 0100FF0A:7344 0200FF0A:9C40 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0 "
        "20 4\n"
        "   2: 0100007F:0016 0100007F:D3E2 01 00000000:00000000 00:00000000 00000000     0        0 3 1 0 "
        "20 4\n"
    )
    assert tp.listening_ports([tcp]) == {29508}


def test_checkpoints_and_a_finished_run(tmp_path: Path) -> None:
    for step, complete in ((10, True), (20, True), (30, False)):
        d = tmp_path / "checkpoints" / f"step_{step:08d}"
        d.mkdir(parents=True)
        if complete:
            (d / "COMPLETE").write_text("")
    lines = [
        {"event": "start"},
        {"event": "end", "step": 20},
        {"event": "start"},
        {"event": "train", "step": 25},
    ]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    assert tp.checkpoints(str(tmp_path)) == {"complete": [10, 20], "partial": [30], "finished_step": None}
    lines.append({"event": "end", "step": 30})
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    assert tp.checkpoints(str(tmp_path))["finished_step"] == 30


@pytest.mark.parametrize("missing", ["venv"])
def test_missing_venv_is_named(missing: str) -> None:
    facts = copy.deepcopy(healthy())
    facts["node2"]["venv"] = {"path": "/opt/rdmaops/venv", "exists": False}
    assert (
        "node2: no venv at /opt/rdmaops/venv: run site.yml (role python_env) on it" in report(facts)["errors"]
    )


def test_node_listening_ports_sees_a_listening_socket_and_not_a_closed_one() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        assert port in tp.node_listening_ports()
    assert port not in tp.node_listening_ports()
