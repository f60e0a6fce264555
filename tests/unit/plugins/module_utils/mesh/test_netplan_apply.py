"""Decisions of the safe netplan apply (module_utils/mesh/netplan_apply.py) with recorded side effects."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import netplan_apply as na

from ...conftest import FIXTURE_DIR

DEST = "/etc/netplan/60-rdmaops-mesh.yaml"


class FakeNode:
    """A node whose reachability depends on which netplan file is installed."""

    def __init__(
        self,
        old: str | None,
        reachable: dict[str | None, set[str]],
        generate_ok: bool = True,
        reload_lag: int = 0,
        lose_reload: bool = False,
    ) -> None:
        self.files: dict[str, str] = {} if old is None else {DEST: old}
        self.modes: dict[str, int] = {} if old is None else {DEST: 0o600}
        self.reachable = reachable  # content -> addresses answering while that content is applied
        self.applied: str | None = old
        self.generate_ok = generate_ok
        self.log: list[str] = []
        self.clock = 0.0
        # networkctl reload is asynchronous: the new file takes effect after this many address polls.
        self.reload_lag = reload_lag
        self.pending_polls = 0
        self.pending_content: str | None = None
        # networkd takes the reload but leaves the link as it was, until asked to reconfigure it
        self.lose_reload = lose_reload
        self.run_at: dict[str, list[float]] = {}  # command -> clock at each run

    def ops(self) -> na.ApplyOps:
        return na.ApplyOps(
            read=self.files.get,
            write=self._write,
            remove=self._remove,
            mode=self.modes.get,
            chmod=self._chmod,
            run=self._run,
            probe=self._probe,
            addresses=self._addresses,
            sleep=self._sleep,
            monotonic=lambda: self.clock,
            state=lambda: None,
            hold=lambda: self.log.append("hold"),
        )

    def _write(self, path: str, content: str, mode: int) -> None:
        self.files[path] = content
        self.modes[path] = mode
        self.log.append(f"write {path}")

    def _remove(self, path: str) -> None:
        self.files.pop(path, None)
        self.log.append(f"remove {path}")

    def _chmod(self, path: str, mode: int) -> None:
        self.modes[path] = mode
        self.log.append(f"chmod {path} {mode:o}")

    def _run(self, argv: list[str]) -> tuple[int, str, str]:
        self.log.append(" ".join(argv))
        self.run_at.setdefault(" ".join(argv), []).append(self.clock)
        if argv == na.GENERATE and not self.generate_ok and self.files.get(DEST) == "bad":
            return 1, "", "Error in network definition: invalid boolean value 'maybe'"
        if argv[:2] == ["networkctl", "reconfigure"]:
            self.applied = self.files.get(DEST)
        if argv == na.RELOAD and self.lose_reload:
            return 0, "", ""
        if argv == na.RELOAD:
            if self.reload_lag:
                self.pending_polls, self.pending_content = self.reload_lag, self.files.get(DEST)
            else:
                self.applied = self.files.get(DEST)
        return 0, "", ""

    def _addresses(self) -> dict[str, set[str]]:
        if self.pending_polls:
            self.pending_polls -= 1
            if self.pending_polls == 0:
                self.applied = self.pending_content
        return {"data0": {f"{self.applied}/30"}} if self.applied else {}

    def _probe(self, targets: Sequence[na.Target]) -> list[bool]:
        self.clock += 1.0
        ok = self.reachable.get(self.applied, set())
        self.log.append("probe " + ",".join(t.address for t in targets))
        return [t.address in ok for t in targets]

    def _sleep(self, seconds: float) -> None:
        self.clock += seconds


STATUS_DATA0 = "networkctl status --no-pager --lines 10 data0"
TARGETS = [na.Target("10.99.0.1"), na.Target("192.168.100.2", 8972)]


def test_unchanged_file_does_nothing() -> None:
    node = FakeNode("same", {"same": {"10.99.0.1"}})
    result = na.safe_apply(DEST, "same", targets=TARGETS, ops=node.ops())
    assert not result.changed and node.log == []


def test_wrong_mode_only_fixes_mode() -> None:
    node = FakeNode("same", {})
    node.modes[DEST] = 0o644
    result = na.safe_apply(DEST, "same", targets=TARGETS, ops=node.ops())
    assert result.changed and node.log == [f"chmod {DEST} 600"]


def test_check_mode_reports_change_without_touching_anything() -> None:
    node = FakeNode("old", {"old": {"10.99.0.1"}})
    result = na.safe_apply(DEST, "new", targets=TARGETS, check_mode=True, ops=node.ops())
    assert result.changed and (result.before, result.after) == ("old", "new")
    assert node.log == [] and node.files[DEST] == "old"


def test_first_apply_only_requires_what_answered_before() -> None:
    # Peers have no addresses before the first run: only management is required.
    node = FakeNode(None, {None: {"10.99.0.1"}, "new": {"10.99.0.1"}})
    result = na.safe_apply(DEST, "new", targets=TARGETS, ops=node.ops())
    assert result.changed and result.required == ["10.99.0.1"]
    assert node.files[DEST] == "new" and node.modes[DEST] == 0o600
    assert result.backup_file is None


def test_good_change_is_kept_with_backup() -> None:
    both = {"10.99.0.1", "192.168.100.2"}
    node = FakeNode("old", {"old": both, "new": both})
    result = na.safe_apply(DEST, "new", targets=TARGETS, ops=node.ops())
    assert result.changed and result.backup_file == f"{DEST}.rdmaops-prev"
    assert node.files[result.backup_file] == "old" and node.files[DEST] == "new"
    assert result.required == ["10.99.0.1", "192.168.100.2 (DF 8972 B)"]


def test_slow_peer_is_waited_for() -> None:
    both = {"10.99.0.1", "192.168.100.2"}
    node = FakeNode("old", {"old": both, "new": both})
    calls = {"n": 0}
    base_probe = node._probe

    def flaky(targets: Sequence[na.Target]) -> list[bool]:
        calls["n"] += 1
        answers = base_probe(targets)
        return [False] * len(answers) if calls["n"] in (2, 3) else answers

    ops = node.ops()
    ops.probe = flaky
    result = na.safe_apply(DEST, "new", targets=TARGETS, ops=ops)
    # before, two silent rounds, then two answering rounds a second apart
    assert result.changed and node.files[DEST] == "new" and calls["n"] == 5


def test_breaking_change_is_rolled_back() -> None:
    # The new file puts the port on the wrong link: the peer stops answering.
    node = FakeNode("old", {"old": {"10.99.0.1", "192.168.100.2"}, "broken": {"10.99.0.1"}})
    with pytest.raises(na.ApplyError) as info:
        na.safe_apply(DEST, "broken", targets=TARGETS, timeout_s=5, ops=node.ops())
    msg = str(info.value)
    assert "192.168.100.2 (DF 8972 B) stopped answering within 5 s" in msg
    assert "previous configuration was restored and answers again" in msg
    assert node.files[DEST] == "old" and node.applied == "old"
    assert info.value.details["rolled_back"] is True
    # the apply's own time, from the reload to the restored file answering (the fake's clock)
    assert 5 <= info.value.details["waited"] <= 3 * 5
    # with a name (mesh_check_targets gives port and peer) the message leads with it
    named = na.parse_targets(
        [{"address": "192.168.100.2", "size": 8972, "name": "node1 mesh0 -> node2 link address"}]
    )
    node = FakeNode("old", {"old": {"192.168.100.2"}, "broken": set()})
    with pytest.raises(na.ApplyError) as info:
        na.safe_apply(DEST, "broken", targets=named, timeout_s=5, ops=node.ops())
    assert "node1 mesh0 -> node2 link address (192.168.100.2, DF 8972 B) stopped answering" in str(info.value)
    assert node.log.count("networkctl reload") == 2


def test_breaking_first_apply_removes_the_new_file() -> None:
    node = FakeNode(None, {None: {"10.99.0.1"}, "broken": set()})
    with pytest.raises(na.ApplyError, match=r"10\.99\.0\.1 stopped answering"):
        na.safe_apply(DEST, "broken", targets=TARGETS, timeout_s=3, ops=node.ops())
    assert DEST not in node.files and f"remove {DEST}" in node.log


def test_generate_failure_restores_before_reload() -> None:
    node = FakeNode("old", {"old": {"10.99.0.1"}}, generate_ok=False)
    with pytest.raises(na.ApplyError, match=r"netplan generate rejected .*invalid boolean value 'maybe'"):
        na.safe_apply(DEST, "bad", targets=TARGETS, ops=node.ops())
    assert node.files[DEST] == "old"
    # The bad file was never loaded into networkd.
    first_reload = node.log.index("networkctl reload")
    assert node.log[first_reload - 1] == "netplan generate" and node.applied == "old"


def test_restore_that_does_not_help_says_so() -> None:
    node = FakeNode("old", {"old": {"192.168.100.2"}, "new": set()})
    node.reachable["old"] = {"192.168.100.2"}
    ops = node.ops()
    answers = iter([[True, True]])  # before: both answered; afterwards nothing answers at all
    ops.probe = lambda targets: next(answers, [False] * len(targets))
    with pytest.raises(na.ApplyError, match=r"but 10\.99\.0\.1, 192\.168\.100\.2 .* still does not answer"):
        na.safe_apply(DEST, "new", targets=TARGETS, timeout_s=0, ops=ops)


def test_waits_for_networkd_before_probing() -> None:
    # Right after the reload the old (working) configuration still answers; only once the
    # new addresses appear does the probe see the broken one, and rolls it back.
    node = FakeNode("old", {"old": {"10.99.0.1", "192.168.100.2"}, "broken": {"10.99.0.1"}}, reload_lag=3)
    with pytest.raises(na.ApplyError, match=r"192\.168\.100\.2 \(DF 8972 B\) stopped answering"):
        na.safe_apply(
            DEST, "broken", targets=TARGETS, expect=[("data0", "broken/30")], timeout_s=5, ops=node.ops()
        )
    assert node.files[DEST] == "old"


def test_new_addresses_never_appearing_rolls_back() -> None:
    node = FakeNode("old", {"old": {"10.99.0.1"}, "new": {"10.99.0.1"}})
    with pytest.raises(na.ApplyError, match=r"networkd did not configure 10\.0\.0\.9/30 on data0 within 2 s"):
        na.safe_apply(
            DEST, "new", targets=TARGETS, expect=[("data0", "10.0.0.9/30")], timeout_s=2, ops=node.ops()
        )
    assert node.files[DEST] == "old"
    # networkd's view of the interface is read before the restore reloads it
    status = node.log.index(STATUS_DATA0)
    assert status < node.log.index(f"write {DEST}", node.log.index("networkctl reload"))


def test_link_left_unconfigured_after_the_reload_is_reconfigured_once() -> None:
    both = {"10.99.0.1", "192.168.100.2"}
    node = FakeNode("old", {"old": both, "new": both}, lose_reload=True)
    result = na.safe_apply(
        DEST, "new", targets=TARGETS, expect=[("data0", "new/30")], timeout_s=4, ops=node.ops()
    )
    assert result.changed and node.applied == "new" and result.reconfigured == ["data0"]
    assert node.log.count("networkctl reconfigure data0") == 1
    # not before half the wait: a normal reload shows within it
    assert node.clock >= 2.0


def test_reconfigure_that_does_not_help_rolls_back_within_the_timeout() -> None:
    node = FakeNode("old", {"old": {"10.99.0.1"}, "new": {"10.99.0.1"}})
    with pytest.raises(na.ApplyError, match=r"did not configure 10\.0\.0\.9/30 on data0 within 4 s") as err:
        na.safe_apply(
            DEST, "new", targets=TARGETS, expect=[("data0", "10.0.0.9/30")], timeout_s=4, ops=node.ops()
        )
    assert err.value.details["reconfigured"] == ["data0"] and node.files[DEST] == "old"
    # the whole wait, reconfigure included, stays within the timeout (plus one poll)
    # seconds after the apply's reload (the second reload is the restore's)
    reload, restore = node.run_at["networkctl reload"]
    asked = node.run_at["networkctl reconfigure data0"][0] - reload
    gave_up = node.run_at[STATUS_DATA0][0] - reload
    assert 2.0 <= asked <= gave_up <= 4.2 and restore >= gave_up + reload, (asked, gave_up)


def test_good_change_with_lag_is_kept() -> None:
    both = {"10.99.0.1", "192.168.100.2"}
    node = FakeNode("old", {"old": both, "new": both}, reload_lag=4)
    result = na.safe_apply(DEST, "new", targets=TARGETS, expect=[("data0", "new/30")], ops=node.ops())
    assert result.changed and node.applied == "new"


def test_parse_ip_addr_and_expect() -> None:
    text = json.dumps(
        [
            {
                "ifindex": 1,
                "ifname": "lo",
                "addr_info": [{"family": "inet", "local": "127.0.0.1", "prefixlen": 8}],
            },
            {
                "ifindex": 3,
                "ifname": "data0",
                "mtu": 9000,
                "addr_info": [
                    {"family": "inet", "local": "192.168.100.1", "prefixlen": 30, "scope": "global"},
                    {"family": "inet6", "local": "fe80::1", "prefixlen": 64, "scope": "link"},
                ],
            },
            {"ifindex": 4, "ifname": "data1", "addr_info": []},
        ]
    )
    assert na.parse_ip_addr(text) == {"lo": {"127.0.0.1/8"}, "data0": {"192.168.100.1/30"}, "data1": set()}
    assert na.parse_expect([{"ifname": "data0", "address": "192.168.100.1/30"}]) == [
        ("data0", "192.168.100.1/30")
    ]
    with pytest.raises(ValueError, match="expected address"):
        na.parse_expect([{"ifname": "data0", "address": "192.168.100.1"}])


def test_parse_targets_and_ping_argv() -> None:
    targets = na.parse_targets(["10.0.0.1", {"address": "10.0.0.2", "size": 8972}])
    assert targets == [na.Target("10.0.0.1"), na.Target("10.0.0.2", 8972)]
    assert na.ping_argv(targets[1]) == [
        "ping",
        "-n",
        "-q",
        "-c",
        "1",
        "-W",
        "1",
        "-M",
        "do",
        "-s",
        "8972",
        "10.0.0.2",
    ]
    with pytest.raises(ValueError, match="check target 5"):
        na.parse_targets([5])


def test_real_file_write_is_atomic_and_private(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = str(tmp_path / "netplan" / "60-x.yaml")
    na.write_file(path, "network: {version: 2}\n", 0o600)
    assert na.read_file(path) == "network: {version: 2}\n" and na.file_mode(path) == 0o600
    assert sorted(p.name for p in (tmp_path / "netplan").iterdir()) == ["60-x.yaml"]
    na.remove_file(path)
    assert na.read_file(path) is None and na.file_mode(path) is None


# --------------------------------------------------------------------------- interface state and repair

FIXTURES = FIXTURE_DIR / "iproute2"


def test_parse_state_reads_addresses_flags_and_static_routes() -> None:
    addr = (FIXTURES / "ip_addr_node1_mesh.json").read_text()
    routes = json.dumps(
        [
            {
                "dst": "10.255.0.2",
                "gateway": "192.168.100.2",
                "dev": "data0",
                "protocol": "static",
                "prefsrc": "10.255.0.1",
                "flags": [],
            },
            {
                "dst": "10.96.0.0/24",
                "dev": "mgmt0",
                "protocol": "kernel",
                "scope": "link",
                "prefsrc": "10.96.0.11",
                "flags": [],
            },
        ]
    )
    state = na.parse_state(addr, routes)
    assert state.links["mgmt0"] == (True, frozenset({"10.96.0.11/24"}))
    assert state.links["nodeaddr0"] == (True, frozenset({"10.255.0.1/32"}))
    # The kernel's own subnet routes come back with the addresses: only static ones are kept.
    assert state.routes == frozenset({("10.255.0.2", "192.168.100.2", "data0", "10.255.0.1")})


def _state(links: dict[str, tuple[bool, set[str]]], routes: set[tuple[str, str, str, str]]) -> na.LinkState:
    return na.LinkState({k: (up, frozenset(a)) for k, (up, a) in links.items()}, frozenset(routes))


def test_repair_gives_a_taken_over_management_port_back() -> None:
    before = _state(
        {"mgmt0": (True, {"10.96.0.11/24"}), "data0": (True, {"192.168.100.1/30"})},
        {("default", "10.96.0.1", "mgmt0", "")},
    )
    # The new file took mgmt0: its address replaced, the default route gone, the port down.
    now = _state({"mgmt0": (False, {"172.31.254.1/24"}), "data0": (True, {"192.168.100.1/30"})}, set())
    assert na.repair_commands(before, now) == [
        ["ip", "link", "set", "dev", "mgmt0", "up"],
        ["ip", "addr", "del", "172.31.254.1/24", "dev", "mgmt0"],
        ["ip", "addr", "add", "10.96.0.11/24", "dev", "mgmt0"],
        ["ip", "route", "replace", "default", "via", "10.96.0.1", "dev", "mgmt0"],
    ]


def test_repair_leaves_an_unchanged_node_and_vanished_devices_alone() -> None:
    before = _state({"mgmt0": (True, {"10.96.0.11/24"}), "br9": (True, {"10.9.9.9/32"})}, set())
    assert na.repair_commands(before, before) == []
    # br9 no longer exists: networkd recreates its own devices; nothing to run for it.
    now = _state({"mgmt0": (True, {"10.96.0.11/24"})}, set())
    assert na.repair_commands(before, now) == []


class TakeoverNode(FakeNode):
    """A node where the new file takes over the management port; only a repair gives its address back.

    The first probe round after the reload still answers (networkd drops the old address a moment later).
    """

    def __init__(self) -> None:
        super().__init__("old", {"old": {"10.99.0.1"}, "new": set()})
        self.mgmt = {"10.99.0.11/24"}
        self.rounds_after_reload = 0

    def ops(self) -> na.ApplyOps:
        ops = super().ops()
        ops.state = lambda: _state({"mgmt0": (True, set(self.mgmt))}, set())
        return ops

    def _run(self, argv: list[str]) -> tuple[int, str, str]:
        rc = super()._run(argv)
        if argv == na.RELOAD and self.applied == "new":
            self.mgmt = {"172.31.254.1/24"}
        if argv[:3] == ["ip", "addr", "del"]:
            self.mgmt.discard(argv[3])
        if argv[:3] == ["ip", "addr", "add"]:
            self.mgmt.add(argv[3])
        return rc

    def _probe(self, targets: Sequence[na.Target]) -> list[bool]:
        self.clock += 1.0
        if self.applied == "new":
            self.rounds_after_reload += 1
        answering = "10.99.0.11/24" in self.mgmt or self.rounds_after_reload == 1
        return [answering] * len(targets)


def test_takeover_of_the_management_port_is_rolled_back_and_repaired() -> None:
    node = TakeoverNode()
    with pytest.raises(na.ApplyError) as err:
        na.safe_apply(DEST, "new", targets=[na.Target("10.99.0.1")], timeout_s=8, ops=node.ops())
    assert "restored and answers again" in str(err.value)
    assert node.files[DEST] == "old" and node.mgmt == {"10.99.0.11/24"}
    assert err.value.details["repaired"] == [
        "ip addr del 172.31.254.1/24 dev mgmt0",
        "ip addr add 10.99.0.11/24 dev mgmt0",
    ]


class SwapNode(FakeNode):
    """Two data ports that trade addresses in the new file; networkd puts them back 2 s after the restore.

    An `ip` command on those ports before then would race networkd's own reconfiguration of them.
    """

    def __init__(self) -> None:
        super().__init__("old", {"old": {"192.168.100.2"}, "new": set()})
        self.ports = {"data0": {"192.168.100.1/30"}, "data1": {"192.168.100.5/30"}}
        self.settles_at: float | None = None

    def ops(self) -> na.ApplyOps:
        ops = super().ops()
        ops.state = self._state
        return ops

    def _state(self) -> na.LinkState:
        if self.settles_at is not None and self.clock >= self.settles_at:
            self.ports = {"data0": {"192.168.100.1/30"}, "data1": {"192.168.100.5/30"}}
        return _state({name: (True, set(addrs)) for name, addrs in self.ports.items()}, set())

    def _run(self, argv: list[str]) -> tuple[int, str, str]:
        rc = super()._run(argv)
        if argv == na.RELOAD and self.files.get(DEST) == "new":
            self.ports = {"data0": {"192.168.100.5/30"}, "data1": {"192.168.100.1/30"}}
        elif argv == na.RELOAD:
            self.settles_at = self.clock + 2.0
        return rc


def test_rollback_leaves_networkd_to_restore_the_links_it_manages() -> None:
    node = SwapNode()
    with pytest.raises(na.ApplyError, match="restored and answers again") as err:
        na.safe_apply(DEST, "new", targets=[na.Target("192.168.100.2")], timeout_s=8, ops=node.ops())
    assert err.value.details["repaired"] == []
    assert not [line for line in node.log if line.startswith("ip ")]
    assert node.ports == {"data0": {"192.168.100.1/30"}, "data1": {"192.168.100.5/30"}}


def test_the_test_hook_holds_between_the_reload_and_the_probes() -> None:
    node = FakeNode("old", {"old": {"10.99.0.1"}, "new": {"10.99.0.1"}})
    na.safe_apply(DEST, "new", targets=TARGETS, ops=node.ops())
    reload_at, hold_at = node.log.index("networkctl reload"), node.log.index("hold")
    assert hold_at == reload_at + 1
    assert any(e.startswith("probe") for e in node.log[hold_at:])


def test_the_hook_stops_the_process_only_while_its_flag_exists(tmp_path: Path) -> None:
    flag = tmp_path / "netplan_apply.hold"
    code = (
        "import sys; from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import netplan_apply"
    )
    code += " as na; na.hold_if_asked(sys.argv[1]); print('went on')"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    # no flag: straight through
    argv = [sys.executable, "-c", code, str(flag)]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.stdout == "went on\n" and not Path(f"{flag}.pid").exists()
    flag.touch()
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(flag)], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 60
        stat = Path(f"/proc/{proc.pid}/stat")
        while stat.read_text().rpartition(")")[2].split()[0] != "T" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert stat.read_text().rpartition(")")[2].split()[0] == "T"
        assert Path(f"{flag}.pid").read_text() == f"{proc.pid}\n"
        os.kill(proc.pid, signal.SIGCONT)
        assert proc.communicate(timeout=60)[0] == "went on\n"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_target_with_a_source_is_pinged_from_that_address() -> None:
    """A fabric rail's target: pinged from the node's address on that rail, so its source rule is probed."""
    target = na.parse_targets(
        [{"address": "192.168.200.2", "size": 8972, "name": "rail1", "source": "192.168.200.6"}]
    )
    assert target == [na.Target("192.168.200.2", 8972, "rail1", "192.168.200.6")]
    assert na.ping_argv(target[0])[-3:] == ["-I", "192.168.200.6", "192.168.200.2"]
    assert "-I" not in na.ping_argv(na.Target("192.168.200.2"))
