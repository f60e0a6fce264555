"""verify_nccl_path as verify.yml calls it: command results, the NCCL env files (slurped), the mesh plans."""

from __future__ import annotations

import base64

from ansible_collections.rdmaops.cluster.plugins.module_utils.verify import report as vr
from ansible_collections.rdmaops.cluster.plugins.module_utils.verify.thresholds import thresholds
from ansible_collections.rdmaops.cluster.plugins.modules import verify_nccl_path

from ..conftest import FIXTURE_DIR, RunModule

FIX = FIXTURE_DIR / "nccl"


def slurped(text: str) -> dict[str, object]:
    return {"content": base64.b64encode(text.encode()).decode(), "encoding": "base64"}


def runs(kind: str) -> dict[str, object]:
    return {
        f"node{i}": {"rc": 0, "stdout": (FIX / f"2nodes-x2gpu-{kind}-node{i}.log").read_text(), "stderr": ""}
        for i in (0, 1)
    }


def test_rdma_configured_but_socket_used_fails_and_the_report_says_so(run_module: RunModule) -> None:
    env = "# Ansible managed\nNCCL_IB_DISABLE=0\nNCCL_IB_HCA==mlx5_0:1\nNCCL_SOCKET_IFNAME==lo\n"
    out = run_module(
        verify_nccl_path,
        runs=runs("socket"),
        env_files={"node0": slurped(env), "node1": slurped(env)},
    )
    assert out["changed"] is False and out["verdict"] == "fail"
    assert out["problems"] == [
        "node0: RDMA was configured but 4 channels fell back to NCCL's Socket transport",
        "node1: RDMA was configured but 4 channels fell back to NCCL's Socket transport",
    ]
    report = vr.build_report(["node0", "node1"], [], thresholds(), nccl=out)
    assert not report["passed"] and report["failures"][0].startswith("NCCL path: node0: RDMA was configured")
    text = vr.markdown(report)
    assert "## NCCL path" in text and "| node0 | node1 | NET/Socket/0 | lo | - | 4 |" in text


def test_the_plugin_as_nccl_env_writes_it_over_tcp_passes(run_module: RunModule) -> None:
    env = "NCCL_IB_DISABLE=1\nNCCL_NET_PLUGIN=mesh\nNCCL_MESH_TRANSPORT=tcp\n"
    plans = {
        "node0": {"node_address": "127.0.0.1", "links": [{"peer": "node1", "ifname": "lo", "address": ""}]},
        "node1": {"node_address": "127.0.0.1", "links": [{"peer": "node0", "ifname": "lo", "address": ""}]},
    }
    out = run_module(verify_nccl_path, runs=runs("mesh"), env_files={"node0": env, "node1": env}, plans=plans)
    assert (
        out["verdict"] == "pass"
        and out["problems"] == []
        and out["nodes"]["node1"]["plugin"]["loaded"] == "Mesh"
    )
