"""The watcher's commands per node, from the inventory's connection (module_utils/train/watch_ssh.py)."""

from __future__ import annotations

from ansible_collections.rdmaops.cluster.plugins.module_utils.train import watch_ssh


def test_agent_command_follows_the_inventory_connection() -> None:
    hv = {
        "ansible_host": "10.99.0.10",
        "ansible_user": "root",
        "ansible_port": 2222,
        "ansible_ssh_private_key_file": "/k/id",
        "ansible_ssh_common_args": "-o UserKnownHostsFile=/dev/null -o StrictHostKeyChecking=no",
        "ansible_python_interpreter": "/usr/bin/python3",
    }
    argv = watch_ssh.agent_argv(
        hv, "node1", unit="rdmaops-train-tiny.service", metrics="/s/m.jsonl", log="/l", interval=2.0, offset=7
    )
    assert argv[0] == "ssh" and "BatchMode=yes" in argv and "ServerAliveInterval=5" in argv
    assert argv[argv.index("-p") + 1] == "2222" and argv[argv.index("-i") + 1] == "/k/id"
    assert argv[argv.index("-l") + 1] == "root" and "UserKnownHostsFile=/dev/null" in argv
    assert argv[-2:] == ["10.99.0.10", "/usr/bin/python3 - rdmaops-train-tiny.service /s/m.jsonl /l 2.0 7 ''"]
    local = watch_ssh.agent_argv(
        {"ansible_connection": "local"},
        "x",
        unit="u",
        metrics="",
        log="/l",
        interval=1,
        offset=0,
        events="/e",
    )
    assert local == ["/usr/bin/python3", "-", "u", "", "/l", "1", "0", "/e"]
