"""train.yml's watcher: verdicts from the agents' lines, failure causes from real torchrun output, when a
progress line is due (module_utils/train/watch.py); the agent's reading on a node (train_agent)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from ansible_collections.rdmaops.cluster.plugins.module_utils.node.train import agent as ta
from ansible_collections.rdmaops.cluster.plugins.module_utils.train import watch as tw
from ansible_collections.rdmaops.cluster.plugins.module_utils.train import watch_text

from ...conftest import FIXTURE_DIR as FIXTURES
from .conftest import DONE, FAILED, RUNNING, train_step, watch


def feed_all(w: tw.JobWatch, unit: dict, now: float, **line: object) -> None:
    for n in w.nodes:
        w.feed(n, {"phase": ta.unit_phase(unit), "unit": unit, **line}, now)


def test_unit_phases_from_systemctl_show() -> None:
    text = "Id=x\nLoadState=loaded\nActiveState=active\nSubState=exited\nResult=success\nExecMainStatus=0\n"
    assert ta.parse_show(text)["SubState"] == "exited"
    assert ta.unit_phase(ta.parse_show(text)) == "succeeded"
    assert ta.unit_phase(RUNNING) == "running"
    assert ta.unit_phase(FAILED) == "failed"
    assert (
        ta.unit_phase({"LoadState": "not-found", "ActiveState": "inactive", "Result": "success"}) == "absent"
    )
    assert ta.unit_phase({**DONE, "ExecMainStatus": "2"}) == "failed"
    # stopping: still running, unless its main process was killed (systemd then stops the rest)
    stopping = {**RUNNING, "ActiveState": "deactivating", "SubState": "stop-sigterm"}
    assert ta.unit_phase(stopping) == "running"
    assert ta.unit_phase({**stopping, "ExecMainCode": "2", "ExecMainStatus": "9"}) == "failed"


def test_success_on_every_node_gives_the_summary() -> None:
    w = watch()
    feed_all(w, RUNNING, 1100, metrics=[])
    w.feed(
        "node1",
        {
            "phase": "running",
            "unit": RUNNING,
            "metrics": [
                {"event": "start", "time": 1002},
                {"event": "train", "step": 10, "loss": 4.0, "tokens_per_s": 9000, "time": 1010},
                {"event": "eval", "step": 50, "eval_loss": 3.1},
                {"event": "eval", "step": 100, "eval_loss": 3.2},
                {"event": "train", "step": 100, "loss": 2.5, "tokens_per_s": 12000, "time": 1100},
                {"event": "end", "step": 100, "loss": 2.5, "eval_loss": 3.2},
            ],
        },
        1101,
    )
    assert w.decide(1101) is None  # still running on the others
    feed_all(w, DONE, 1105)
    out = w.decide(1105)
    assert out is not None and out.status == "succeeded"
    assert out.message == (
        "job tiny finished: step 100, final loss 2.5000, final eval loss 3.2000, best eval loss 3.1000, "
        "12.0k tok/s, wall time 1m45s"
    )


def test_the_earliest_failure_is_named_with_its_rank_and_signal() -> None:
    tail = (FIXTURES / "torchrun" / "root_cause_sigkill.txt").read_text().splitlines()
    w = watch()
    feed_all(w, RUNNING, 1001)
    w.feed(
        "node3",
        {
            "phase": "failed",
            "unit": FAILED,
            "exited_at": 1050.5,
            "log_tail": ["RuntimeError: Connection closed by peer"],
        },
        1051,
    )
    assert w.decide(1051) is None  # only a consequence so far, and node1 still runs: the failure grace first
    w.feed("node2", {"phase": "failed", "unit": FAILED, "exited_at": 1049.0, "log_tail": tail}, 1051)
    out = w.decide(1051)  # a cause of its own: named at once, without waiting for node1
    assert out is not None and out.status == "failed"
    assert out.node == "node2" and out.node_rank == 1 and out.rank == 1
    assert out.message == (
        "job tiny failed on node2 (node rank 1, rank 1): killed by signal 9 (SIGKILL); then also on node3"
    )
    assert out.log_tail == tail


def test_no_progress_for_the_stall_timeout_is_a_hang() -> None:
    w = watch()
    feed_all(w, RUNNING, 1001)
    w.feed(
        "node1",
        {"phase": "running", "unit": RUNNING, "metrics": [{"event": "train", "step": 20, "time": 1010}]},
        1010,
    )
    feed_all(w, RUNNING, 1065)
    assert w.decide(1065) is None
    feed_all(w, RUNNING, 1071)
    out = w.decide(1071)
    assert out is not None and out.status == "hung"
    assert out.message == (
        "job tiny hung: no progress for 1m01s at step 20 (train_stall_timeout=60 s); a rank is stuck or "
        "frozen (no process states from the nodes)"
    )


def test_start_up_has_its_own_timeout() -> None:
    w = watch()
    feed_all(w, RUNNING, 1200)
    assert w.decide(1200) is None  # 200 s without a step: still within start-up
    feed_all(w, RUNNING, 1301)
    out = w.decide(1301)
    assert (
        out is not None
        and "start-up (no step logged yet)" in out.message
        and "train_startup_timeout=300" in out.message
    )


def test_a_silent_or_disconnected_node_is_lost() -> None:
    w = watch()
    feed_all(w, RUNNING, 1001)
    w.feed("node1", {"phase": "running", "unit": RUNNING}, 1030)
    w.feed("node2", {"phase": "running", "unit": RUNNING}, 1030)
    out = w.decide(1030)
    assert out is not None and out.status == "lost" and out.node == "node3"
    assert "no word from node3 (node rank 2) for 29s" in out.message
    w = watch()
    feed_all(w, RUNNING, 1001)
    w.stream_ended("node2", "ssh: connect to host 10.99.0.11 port 22: No route to host", 1002)
    out = w.decide(1002)
    assert out is not None and out.status == "lost"
    assert out.message.endswith(
        "lost node2 (node rank 1): ssh: connect to host 10.99.0.11 port 22: No route to host"
    )


def test_progress_is_shown_at_start_on_the_first_step_and_every_interval() -> None:
    w = watch()
    assert w.progress_due(1000, 30, None)  # the start
    assert not w.progress_due(1010, 30, None)
    train_step(w, 5, 1012)
    assert w.progress_due(1012, 30, None)  # the first step, before the interval is up
    train_step(w, 10, 1020)
    assert not w.progress_due(1020, 30, None)
    assert w.progress_due(1042, 30, None)


def test_a_job_shorter_than_the_interval_still_shows_atrain_step() -> None:
    # The first step record arrives with the end: the only chance to show the last step and its loss.
    w = watch()
    assert w.progress_due(1000, 30, None)
    train_step(w, 30, 1008)
    done = tw.Outcome("succeeded", "job tiny finished")
    assert w.progress_due(1008, 30, done)
    assert watch_text.progress_line(w, 1008).startswith("[tiny] step 30/100 (30%), loss 4.0000")
    assert not w.progress_due(1009, 30, done)


def test_no_progress_line_after_a_failure() -> None:
    w = watch()
    w.progress_due(1000, 30, None)
    train_step(w, 5, 1005)
    assert not w.progress_due(1005, 30, tw.Outcome("failed", "job tiny failed on node2"))


def test_agent_reads_only_new_complete_lines(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_text(json.dumps({"event": "end", "step": 5}) + "\n")
    reader = ta.MetricsReader(str(path), offset=path.stat().st_size)  # an earlier run's records are skipped
    assert reader.read() == []
    with path.open("a") as fh:
        fh.write(json.dumps({"event": "start"}) + "\n" + '{"event": "tr')
    assert reader.read() == [{"event": "start"}]
    with path.open("a") as fh:
        fh.write('ain", "step": 1}\n')
    assert reader.read() == [{"event": "train", "step": 1}]
    assert ta.last_records(str(path)) == {"start": {"event": "start"}, "train": {"event": "train", "step": 1}}


def test_a_peer_that_lost_its_connection_is_not_the_cause() -> None:
    # Seen on the lab: kill -9 of node2's rank; node1's rank 0 then failed in a barrier ("Connection closed by
    # peer") and node1 reported first. The killed rank is the cause, whichever node reports first.
    killed = (FIXTURES / "torchrun" / "root_cause_sigkill.txt").read_text().splitlines()
    peer = (FIXTURES / "torchrun" / "root_cause_peer_closed.txt").read_text().splitlines()
    cause = watch_text.failure_cause(peer, FAILED)
    assert cause["rank"] == 0 and cause["peer_gone"] is True
    assert cause["why"].startswith("RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/")
    assert "Connection closed by peer [10.255.0.2]" in cause["why"]
    w = watch(failure_grace=5.0)
    feed_all(w, RUNNING, 1001)
    w.feed("node1", {"phase": "failed", "unit": FAILED, "exited_at": 1048.0, "log_tail": peer}, 1049)
    assert w.decide(1049) is None  # the others are still running: wait for them a moment
    w.feed("node2", {"phase": "failed", "unit": FAILED, "exited_at": 1049.5, "log_tail": killed}, 1050)
    out = w.decide(1050)  # the killed rank reported: the cause, whoever reported first
    assert out is not None and out.node == "node2" and out.rank == 1
    assert (
        out.message
        == "job tiny failed on node2 (node rank 1, rank 1): killed by signal 9 (SIGKILL); then also on node1"
    )
    w = watch(failure_grace=5.0)
    feed_all(w, RUNNING, 1001)
    for n, t in (("node1", 1048.0), ("node3", 1049.0)):
        w.feed(n, {"phase": "failed", "unit": FAILED, "exited_at": t, "log_tail": peer}, 1050)
    assert w.decide(1050) is None  # only consequences, node2 still runs
    w.feed("node2", {"phase": "failed", "unit": FAILED, "exited_at": 1049.5, "log_tail": killed}, 1051)
    out = w.decide(1051)
    assert out is not None and out.node == "node2" and out.message.endswith("then also on node1, node3")


def test_the_grace_ends_while_a_peer_still_runs() -> None:
    peer = (FIXTURES / "torchrun" / "root_cause_peer_closed.txt").read_text().splitlines()
    w = watch(failure_grace=5.0)
    feed_all(w, RUNNING, 1001)
    w.feed("node1", {"phase": "failed", "unit": FAILED, "exited_at": 1048.0, "log_tail": peer}, 1049)
    assert w.decide(1053.9) is None
    out = w.decide(1054.0)
    assert out is not None and out.status == "failed" and out.node == "node1"


# ----------------------------------------------------------------------------------------- every process


def procs(*ranks: tuple[int, str, float], launcher: tuple[str, float] | None = ("S", 1.0)) -> list[dict]:
    """An agent's process list: (rank, state, cpu seconds) per rank, and the launcher's (state, cpu)."""
    out = [{"pid": 100 + r, "role": "rank", "name": "rdmaops_trainer", "rank": r, "state": st, "cpu": cpu}
           for r, st, cpu in ranks]  # fmt: skip
    if launcher:
        out.append({"pid": 99, "role": "launcher", "name": "torch.distributed.run", "state": launcher[0],
                    "cpu": launcher[1]})  # fmt: skip
    return out


def running(w: tw.JobWatch, now: float, step: int | None = None, **per_node: list[dict]) -> None:
    """One round of agent lines: every node running, with its processes; node1 logs STEP if given."""
    for i, n in enumerate(w.nodes):
        line: dict = {"phase": "running", "unit": RUNNING, "procs": per_node.get(n, procs((i, "S", now)))}
        if n == "node1" and step is not None:
            line["metrics"] = [{"event": "train", "step": step, "loss": 3.0, "time": now}]
        w.feed(n, line, now)


KILLED = {"event": "exit", "pid": 99, "role": "launcher", "name": "torch.distributed.run", "code": None,
          "signal": 9, "signal_name": "SIGKILL"}  # fmt: skip


def test_a_launcher_killed_mid_run_fails_the_job_at_once_naming_it() -> None:
    # issue 39: kill -9 of the master's torchrun at step 70; its rank 0 trained on unsupervised
    w = watch()
    running(w, 1010, step=70)
    w.feed("node1", {"phase": "running", "unit": RUNNING, "exits": [KILLED],
                     "procs": procs((0, "S", 5.0), launcher=None)}, 1011)  # fmt: skip
    out = w.decide(1011)  # no grace: nothing else could have caused it
    assert out is not None and out.status == "failed" and out.node == "node1" and out.node_rank == 0
    assert out.message == (
        "job tiny failed on node1 (node rank 0, its launcher torch.distributed.run, pid 99): killed by "
        "signal 9 "
        "(SIGKILL) at step 70; it left rank 0 on node1 (pid 100) running unsupervised"
    )
    # the same on a worker
    w = watch()
    running(w, 1010, step=70)
    w.feed("node3", {"phase": "running", "unit": RUNNING, "exits": [KILLED],
                     "procs": procs((2, "S", 5.0), launcher=None)}, 1011)  # fmt: skip
    out = w.decide(1011)
    assert (
        out is not None
        and out.node == "node3"
        and "(node rank 2, its launcher torch.distributed.run" in out.message
    )


def test_a_launcher_that_exits_while_its_ranks_run_on_is_a_failure_too() -> None:
    w = watch()
    running(w, 1010, step=30)
    crashed = {**KILLED, "code": 1, "signal": None, "signal_name": None}
    w.feed("node2", {"phase": "running", "unit": RUNNING, "exits": [crashed],
                     "procs": procs((1, "S", 5.0), launcher=None)}, 1011)  # fmt: skip
    out = w.decide(1011)
    assert (
        out is not None
        and "node2 (node rank 1, its launcher torch.distributed.run, pid 99): exited with code 1"
        in (out.message)
    )
    # exiting 1 after a rank failed (its ranks gone with it) is the ordinary failure, named from the log
    w = watch()
    running(w, 1010, step=30)
    w.feed("node2", {"phase": "running", "unit": RUNNING, "exits": [crashed], "procs": []}, 1011)
    assert w.decide(1011) is None


def test_a_launcher_killed_after_the_last_step_is_a_warning_when_the_ranks_finish() -> None:
    w = watch(total_steps=100)
    running(w, 1010, step=100)
    w.feed("node1", {"phase": "running", "unit": RUNNING, "exits": [KILLED],
                     "procs": procs((0, "S", 5.0), launcher=None)}, 1011)  # fmt: skip
    assert w.decide(1011) is None  # the ranks need no launcher any more: let them finish
    rank_done = {"event": "exit", "pid": 100, "role": "rank", "rank": 0, "code": 0, "signal": None}
    killed_unit = {**FAILED, "Result": "exit-code", "ExecMainStatus": "137"}
    w.feed("node1", {"phase": "failed", "unit": killed_unit, "exits": [rank_done], "procs": [],
                     "metrics": [{"event": "end", "step": 100, "loss": 2.0}]}, 1013)  # fmt: skip
    for n in ("node2", "node3"):
        w.feed(n, {"phase": "succeeded", "unit": DONE, "procs": []}, 1013)
    out = w.decide(1013)
    assert (
        out is not None
        and out.status == "succeeded"
        and out.message.startswith("job tiny finished: step 100")
    )
    assert out.warnings == [
        "the launcher on node1 (torch.distributed.run, pid 99) was killed by signal 9 (SIGKILL) after "
        "the last "
        "step was logged; its ranks finished without it"
    ]


def test_an_orphan_rank_that_fails_after_the_last_step_fails_the_job() -> None:
    w = watch(total_steps=100)
    running(w, 1010, step=100)
    w.feed(
        "node1",
        {
            "phase": "running",
            "unit": RUNNING,
            "exits": [KILLED],
            "procs": procs((0, "S", 5.0), launcher=None),
        },
        1011,
    )
    bad = {
        "event": "exit",
        "pid": 100,
        "role": "rank",
        "rank": 0,
        "code": None,
        "signal": 6,
        "signal_name": "SIGABRT",
    }
    unit = {**FAILED, "ExecMainStatus": "137"}
    line = {
        "phase": "failed",
        "unit": unit,
        "exits": [bad],
        "procs": [],
        "metrics": [{"event": "end", "step": 100}],
    }
    w.feed("node1", line, 1013)
    for n in ("node2", "node3"):
        w.feed(n, {"phase": "succeeded", "unit": DONE}, 1013)
    out = w.decide(1013)
    assert out is not None and out.status == "failed" and out.node == "node1"
    assert (
        "its launcher torch.distributed.run, pid 99): killed by signal 9 (SIGKILL) at step 100" in out.message
    )


def test_the_unit_main_process_killed_is_named() -> None:
    killed = {"Id": "rdmaops-train-t.service", "Result": "signal", "ExecMainCode": "2", "ExecMainStatus": "9"}
    cause = watch_text.failure_cause([], killed)
    assert cause == {"why": "killed by signal 9", "where": "the unit's main process", "peer_gone": False}
    # what the ranks said as systemd stopped them does not hide it
    peer = (FIXTURES / "torchrun" / "root_cause_peer_closed.txt").read_text().splitlines()
    assert watch_text.failure_cause(peer, killed)["where"] == "the unit's main process"
    w = watch()
    feed_all(w, RUNNING, 1001)
    w.feed("node2", {"phase": "failed", "unit": killed, "exited_at": 1010.0, "log_tail": peer}, 1010)
    for n in ("node1", "node3"):
        w.feed(n, {"phase": "failed", "unit": FAILED, "exited_at": 1011.0, "log_tail": peer}, 1012)
    out = w.decide(1012)
    assert out is not None and out.message.startswith(
        "job tiny failed on node2 (node rank 1, the unit's main process): killed by signal 9"
    )


def test_a_stopped_rank_is_named_before_the_stall_timeout() -> None:
    # issue 39: kill -STOP of node2's rank at step 80 was reported after 5 minutes naming nobody
    w = watch(stall_timeout=300.0, stopped_timeout=20.0)
    running(w, 1010, step=80)
    for t in range(1011, 1031):
        running(w, t, node2=procs((1, "T", 50.0)))
        assert w.decide(t) is None
    running(w, 1031, node2=procs((1, "T", 50.0)))
    out = w.decide(1031)
    assert out is not None and out.status == "hung" and out.node == "node2" and out.rank == 1
    assert out.message == (
        "job tiny hung at step 80: rank 1 on node2 (pid 101) is stopped (state T: SIGSTOP, or a "
        "debugger) for "
        "20s (train_stopped_timeout=20 s); the others wait for it: node1 rank 0 sleeping, node3 rank 2 "
        "sleeping"
    )


def test_a_rank_stopped_only_briefly_is_not_a_hang() -> None:
    w = watch(stall_timeout=300.0, stopped_timeout=20.0)
    running(w, 1010, step=80)
    running(w, 1015, node2=procs((1, "T", 50.0)))
    running(w, 1020, step=90)  # SIGCONT: it runs again
    running(w, 1040, step=100)
    assert w.decide(1040) is None


def test_at_the_stall_timeout_the_states_name_the_odd_rank() -> None:
    w = watch(stall_timeout=60.0)
    running(w, 1010, step=20)
    for t in range(1011, 1080, 5):  # node3's rank spins (its CPU time moves), the others wait idle
        running(w, t, node1=procs((0, "S", 1.0)), node2=procs((1, "S", 1.0)), node3=procs((2, "R", float(t))))
    out = w.decide(1076)
    assert out is not None and out.status == "hung" and out.node == "node3" and out.rank == 2
    assert out.message.startswith(
        "job tiny hung: no progress for 1m06s at step 20 (train_stall_timeout=60 s); rank 2 on node3 "
        "(pid 102) is "
        "the only rank using CPU, the others wait for it (all ranks: rank 0 on node1 (pid 100) "
        "sleeping, no CPU for"
    )
    w = watch(stall_timeout=60.0)
    running(w, 1010, step=20)
    running(w, 1075, node2=procs((1, "D", 1.0)))
    out = w.decide(1075)
    assert out is not None and out.node == "node2"
    assert (
        "rank 1 on node2 (pid 101) is in uninterruptible sleep (state D: waiting on the kernel, often I/O)"
        in (out.message)
    )


def test_agent_process_table(tmp_path: Path) -> None:
    ev = tmp_path / "ev.jsonl"
    me = os.getpid()
    spawned = [
        {"event": "spawn", "pid": me, "role": "rank", "name": "rdmaops_trainer", "rank": 3},
        {"event": "spawn", "pid": 999999, "role": "launcher", "name": "torch.distributed.run"},
    ]
    ev.write_text("".join(json.dumps(e) + "\n" for e in spawned))
    table = ta.ProcessTable(str(ev))
    live, exits = table.read()
    mine = next(p for p in live if p["pid"] == me)
    assert mine["rank"] == 3 and mine["state"] in ("R", "S") and mine["cpu"] > 0
    assert next(p for p in live if p["pid"] == 999999)["state"] == "gone" and exits == []
    with ev.open("a") as fh:
        fh.write(
            json.dumps({"event": "exit", "pid": 999999, "role": "launcher", "code": 0, "signal": None}) + "\n"
        )
    live, exits = table.read()
    assert [p["pid"] for p in live] == [me] and exits[0]["pid"] == 999999
    assert ta.proc_stat(me)["state"] in ("R", "S") and ta.proc_stat(999999) is None


def test_the_log_tail_starts_at_this_launch(tmp_path: Path) -> None:
    log = tmp_path / "train-t.log"
    log.write_text(
        "=== rdmaops train job t: 2026-11-27 06:13:45 +0000\nold run\nstep 10\n"
        "=== rdmaops train job t: 2026-11-27 06:53:28 +0000\nlaunch.sh: job t\nKilled\n"
    )
    assert ta.run_tail(str(log)) == [
        "=== rdmaops train job t: 2026-11-27 06:53:28 +0000",
        "launch.sh: job t",
        "Killed",
    ]
    log.write_text("".join(f"line {i}\n" for i in range(100)))  # the marker scrolled out: the last lines
    assert ta.run_tail(str(log), 3) == ["line 97", "line 98", "line 99"]


def test_the_outcome_is_the_task_result_and_the_limits_come_from_the_options() -> None:
    out = tw.Outcome("failed", "job tiny failed", "node2", 1, 1, ["Traceback"], ["a warning"])
    assert out.as_result() == {
        "status": "failed",
        "msg": "job tiny failed",
        "node": "node2",
        "node_rank": 1,
        "rank": 1,
        "log_tail": ["Traceback"],
    }
    options = {
        "stall_timeout": 120,
        "startup_timeout": 900,
        "lost_timeout": 30,
        "failure_grace": 5,
        "stopped_timeout": 10,
    }
    assert tw.Limits.from_params({**options, "job": "tiny"}) == tw.Limits(120.0, 900.0, 30.0, 5.0, 10.0)
