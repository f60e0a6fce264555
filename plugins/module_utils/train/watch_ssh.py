# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How train.yml's watcher reaches the nodes: the command lines the action plugin rdmaops.cluster.train_watch
runs for each node, with that node's inventory connection settings (ssh, or as is for
ansible_connection=local): the agent (module_utils/node/train/agent.py) that streams the node's lines, and
``systemctl stop`` of the job's unit once the verdict is known.
"""

from __future__ import annotations

import getpass
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

# Long-lived streams: fail fast on a dead peer (ServerAlive) instead of TCP's minutes-long retries.
SSH_OPTIONS = [
    "-T",
    "-o", "BatchMode=yes",
    "-o", "ConnectTimeout=15",
    "-o", "ServerAliveInterval=5",
    "-o", "ServerAliveCountMax=3",
]  # fmt: skip


def remote_argv(hostvars: Mapping[str, Any], name: str, remote: Sequence[str]) -> list[str]:
    """A command on a node with its inventory connection settings (ssh; as is for ansible_connection=local):
    address, port, user, key, common and extra ssh arguments."""
    if hostvars.get("ansible_connection") == "local":
        return list(remote)
    argv = ["ssh", *SSH_OPTIONS]
    port = hostvars.get("ansible_port") or hostvars.get("ansible_ssh_port")
    if port:
        argv += ["-p", str(port)]
    key = hostvars.get("ansible_ssh_private_key_file") or hostvars.get("ansible_private_key_file")
    if key:
        argv += ["-i", str(key)]
    user = hostvars.get("ansible_user") or hostvars.get("ansible_ssh_user")
    if user:
        argv += ["-l", str(user)]
    for extra in ("ansible_ssh_common_args", "ansible_ssh_extra_args"):
        if hostvars.get(extra):
            argv += shlex.split(str(hostvars[extra]))
    argv.append(str(hostvars.get("ansible_host") or name))
    # ssh joins the remote words with spaces for the remote shell: quote each one.
    argv.append(" ".join(shlex.quote(w) for w in remote))
    return argv


def agent_argv(
    hostvars: Mapping[str, Any],
    name: str,
    *,
    unit: str,
    metrics: str,
    log: str,
    interval: float,
    offset: int,
    events: str = "",
    ports: Sequence[str] = (),
) -> list[str]:
    """How to run the agent on a node: its source goes to the remote Python's stdin. PORTS: the data ports
    whose cables it watches."""
    python = str(hostvars.get("ansible_python_interpreter") or "/usr/bin/python3")
    if python.startswith("auto"):
        python = "/usr/bin/python3"
    argv = [python, "-", unit, metrics or "", log, str(interval), str(offset), events]
    return remote_argv(hostvars, name, [*argv, ",".join(ports)] if ports else argv)


def stop_argv(hostvars: Mapping[str, Any], name: str, unit: str) -> list[str]:
    """``systemctl stop UNIT`` on a node (through ``sudo -n`` unless Ansible logs in as root there): the
    watcher stops the job everywhere as soon as it has a verdict, before the play's own stop task."""
    user = str(hostvars.get("ansible_user") or hostvars.get("ansible_ssh_user") or getpass.getuser())
    sudo = [] if user == "root" or hostvars.get("ansible_connection") == "local" else ["sudo", "-n"]
    return remote_argv(hostvars, name, [*sudo, "systemctl", "stop", unit])
