"""The stdout callback rdmaops.cluster.readable: a role's argument errors on one line, verdicts as plain lines
(the rest is the default callback's), unit-tested and through a real ansible-playbook run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from ansible_collections.rdmaops.cluster.plugins.callback import readable

from ..conftest import ROOT as REPO


def test_an_argument_spec_failure_is_one_line() -> None:
    # what validate_argument_spec returns (ansible-core 2.19), the spec cut down
    result = {
        "failed": True,
        "msg": "Validation of arguments failed:\nargument 'mesh_network_mtu' is of type str and we were "
        "unable "
        "to convert to int: \"'jumbo'\" cannot be converted to an int",
        "argument_spec_data": {"mesh_network_mtu": {"type": "int", "default": 9000}},
        "argument_errors": [
            "argument 'mesh_network_mtu' is of type str and we were unable to convert to int: "
            "\"'jumbo'\" cannot "
            "be converted to an int"
        ],
        "validate_args_context": {"argument_spec_name": "main", "name": "mesh_network", "type": "role"},
    }
    line = readable.argument_error_line(result)
    assert line is not None and "\n" not in line
    assert line.startswith("role mesh_network: argument 'mesh_network_mtu' is of type str")
    assert readable.argument_error_line({"msg": "x"}) is None
    other = {
        **result,
        "validate_args_context": {**result["validate_args_context"], "argument_spec_name": "stop"},
    }
    assert readable.argument_error_line(other).startswith("role mesh_network (entry point stop): ")  # type: ignore[union-attr]


def test_a_list_message_alone_prints_as_lines() -> None:
    assert readable.plain_lines({"msg": ["verdict", "  log"], "failed": True, "changed": False}) == [
        "verdict",
        "  log",
    ]
    assert (
        readable.plain_lines({"msg": ["x"], "failed": True, "rc": 1}) is None
    )  # more to show: the default way
    assert readable.plain_lines({"msg": "one string", "failed": True}) is None


def play(tmp: Path, playbook: str, *extra: str) -> subprocess.CompletedProcess[str]:
    """ansible-playbook with the repository's ansible.cfg (so this callback) on one local host."""
    inv = tmp / "hosts.yml"
    host = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    inv.write_text(json.dumps({"cluster": {"hosts": {"n1": host}}}))
    env = {**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    env.pop("ANSIBLE_STDOUT_CALLBACK", None)
    argv = [str(Path(sys.executable).with_name("ansible-playbook")), "-i", str(inv), playbook, *extra]
    return subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)


def test_a_verdict_prints_as_plain_lines_in_a_real_run(tmp_path: Path) -> None:
    (tmp_path / "fail.yml").write_text(
        "- hosts: cluster\n  gather_facts: false\n  tasks:\n    - ansible.builtin.fail:\n"
        "        msg: \"{{ ['job t failed on n1', 'last lines of n1:/l', '  Traceback: x'] }}\"\n"
        "      run_once: true\n"
    )
    proc = play(tmp_path, str(tmp_path / "fail.yml"))
    assert (
        "fatal: [n1]: FAILED!\n  job t failed on n1\n  last lines of n1:/l\n    Traceback: x\n" in proc.stdout
    )
    assert (proc.stdout + proc.stderr).count("job t failed on n1") == 1  # no "[ERROR]: Task failed" block too


def test_a_bad_role_variable_type_prints_one_line_in_a_real_run(tmp_path: Path) -> None:
    proc = play(
        tmp_path,
        "playbooks/mesh_network.yml",
        "-e",
        "mesh_network_mtu=jumbo",
        "-e",
        "mesh_network_mgmt_cidr=10.0.0.0/24",
    )
    fatal = [line for line in proc.stdout.splitlines() if line.startswith("fatal:")]
    assert proc.returncode != 0 and len(fatal) == 1, proc.stdout
    assert (proc.stdout + proc.stderr).count("mesh_network_mtu") == 1
    assert fatal[0].startswith(
        "fatal: [n1]: FAILED! role mesh_network: argument 'mesh_network_mtu' is of type str"
    )
    assert (
        len(proc.stdout.splitlines()) < 20
    )  # the default callback prints the whole argument spec: 150+ lines
