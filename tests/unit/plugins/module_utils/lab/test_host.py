"""Host operations that need no root (plugins/module_utils/lab/host.py); the rest runs in the lab itself."""

from __future__ import annotations

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils.lab import host as lab_host
from ansible_collections.rdmaops.cluster.plugins.module_utils.lab import plan as lab_plan

from ...conftest import FIXTURE_DIR

# `ss -Hltnp` seen here: a system-wide apt-cacher-ng on 0.0.0.0:3142; two instances' proxies on 3242
SS = FIXTURE_DIR / "ss"
SS_FOREIGN = (SS / "ltnp_system_apt_cacher_ng.txt").read_text()
SS_OWN = (SS / "ltnp_two_instances.txt").read_text()


def test_exec_argv_strips_nsenter() -> None:
    argv = ["nsenter", "--net=/run/netns/lab-node1", "--", "systemd-nspawn", "--boot"]
    assert lab_host.exec_argv(argv) == ["systemd-nspawn", "--boot"]
    assert lab_host.exec_argv(["/usr/sbin/apt-cacher-ng", "-c", "/x"]) == [
        "/usr/sbin/apt-cacher-ng",
        "-c",
        "/x",
    ]


def test_exec_argv_strips_env_then_nsenter() -> None:
    """A node's argv (roles/lab/vars/main.yml lab_nspawn_argv): env sets a variable and execs nsenter, which
    execs systemd-nspawn: the running process shows only the last command line."""
    argv = ["/usr/bin/env", "SYSTEMD_NSPAWN_API_VFS_WRITABLE=network", "nsenter", "--net=/run/netns/n1", "--"]
    assert lab_host.exec_argv([*argv, "systemd-nspawn", "--boot"]) == ["systemd-nspawn", "--boot"]


def test_wait_listening_names_the_process_that_holds_the_port() -> None:
    host = lab_host.Host("unit", runner=lambda argv: (0, SS_FOREIGN + SS_OWN, ""))
    host.wait_listening("aptproxy", 41234, "10.99.0.1", 3242, timeout=0)  # its own listener: fine
    with pytest.raises(lab_plan.LabError) as err:
        host.wait_listening("aptproxy", 41234, "10.99.0.1", 3142, timeout=0)
    assert (
        "aptproxy: 10.99.0.1:3142 is taken by another process: 0.0.0.0:3142 apt-cacher-ng (pid 30054)"
        in str(err.value)
    )
    with pytest.raises(
        lab_plan.LabError, match=r"aptproxy \(pid 41234\) does not listen on 10\.99\.0\.1:3300"
    ):
        host.wait_listening("aptproxy", 41234, "10.99.0.1", 3300, timeout=0)
