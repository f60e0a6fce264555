# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nccl_env role's check and plan phases and the nccl_mesh_plugin role's check phase: their inputs in,
``{errors, plan}`` out.

``nccl_env_check`` (validate: the socket interface, the rails, roce_qos, the file paths), ``nccl_env_plan``
(the environment from the node's ports and rails, and the text of both files the role writes) and
``nccl_mesh_plugin_check`` (the plugin's settings and the decision between it and NCCL's own subnet-aware
routing). Each is called by the action plugin of the same name (plugins/action/) and unit-tested here;
arguments are ``raw`` where the phase's own message names a bad type better than an argument-spec error would.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.nccl import env as nccl_env
from ansible_collections.rdmaops.cluster.plugins.module_utils.nccl import env_file, env_rules
from ansible_collections.rdmaops.cluster.plugins.module_utils.nccl import mesh_plugin as mp
from ansible_collections.rdmaops.cluster.plugins.module_utils.phase_module import required_raw
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import roce

Result = dict[str, Any]

NCCL_ENV_CHECK_SPEC: dict[str, Any] = {
    **required_raw("socket_ifname", "conf_file", "env_file"),
    "roce_qos": {"type": "raw"},
    "socket_nthreads": {"type": "raw"},
    "nsocks_perthread": {"type": "raw"},
    "rails": {"type": "raw", "default": []},
}


def nccl_env_check(p: Mapping[str, Any]) -> Result:
    """The nccl_env role's variables; plan: the DSCP (NCCL_IB_TC = DSCP x 4)."""
    errors = [
        # The socket interface comes from the mesh role unless set: say so when it is the bad one.
        f"{e} (nccl_env_socket_ifname defaults to mesh_network_socket_ifname, which the mesh role exports)"
        for e in env_rules.socket_ifname_errors(p["socket_ifname"], "nccl_env_socket_ifname")
    ]
    errors += env_rules.rails_errors(p.get("rails", []), "nccl_env_rails")
    errors += roce.errors(p["roce_qos"])
    names = ("nccl_env_socket_nthreads", "nccl_env_nsocks_perthread")
    errors += env_rules.socket_threads_errors(p.get("socket_nthreads"), p.get("nsocks_perthread"), names)
    if not all(isinstance(p[k], str) and p[k].startswith("/") for k in ("conf_file", "env_file")):
        errors.append("nccl_env_conf_file and nccl_env_file must be absolute paths")
    if errors:
        return {"errors": errors, "plan": {}}
    return {"errors": [], "plan": {"dscp": roce.settings(p["roce_qos"])["dscp"]}}


NCCL_ENV_PLAN_SPEC: dict[str, Any] = {
    **required_raw("transport", "socket_ifname"),
    "ports": {"type": "list", "elements": "dict", "default": []},
    "roce_qos": {"type": "raw"},
    "gdr_level": {"type": "raw", "default": ""},
    "hca": {"type": "list", "elements": "raw", "default": []},
    "gid_index": {"type": "raw"},
    "net": {"type": "dict", "default": {}},
    "extra": {"type": "dict", "default": {}},
    "socket_nthreads": {"type": "raw"},
    "nsocks_perthread": {"type": "raw"},
    "rails": {"type": "list", "elements": "raw", "default": []},
    "files": {
        "type": "list",
        "elements": "dict",
        "required": True,
        "options": {"dest": {"type": "str", "required": True}, "about": {"type": "str", "default": ""}},
    },
    "managed": {"type": "str", "default": "Ansible managed"},
}


def nccl_env_plan(p: Mapping[str, Any]) -> Result:
    """Plan: ``env`` (the node's variables; ``extra`` wins over ``net``) and ``files`` ({dest: text})."""
    problems = roce.errors(p["roce_qos"])
    if problems:
        return {"errors": problems, "plan": {}}
    try:
        env = nccl_env.compute(
            p["transport"],
            p["ports"],
            p["socket_ifname"],
            dscp=roce.settings(p["roce_qos"])["dscp"],
            gdr_level=p["gdr_level"],
            hca=p["hca"],
            gid_index=p["gid_index"],
            extra={**p["net"], **p["extra"]},
            socket_threads=(p.get("socket_nthreads"), p.get("nsocks_perthread")),
            rails=p.get("rails") or [],
        )
        files = {
            f["dest"]: env_file.render(
                env, [p["managed"], f"{f['about']} Transport: {p['transport']}.".lstrip()]
            )
            for f in p["files"]
        }
    except (nccl_env.NcclEnvError, env_file.EnvFileError) as exc:
        return {"errors": [str(exc)], "plan": {}}
    return {"errors": [], "plan": {"env": env, "files": files}}


NCCL_MESH_PLUGIN_CHECK_SPEC: dict[str, Any] = {
    "nccl_version": {"type": "raw", "default": ""},
    "force": {"type": "bool", "default": False},
    **required_raw("transport", "nsocks", "debug", "prefix"),
    "ifname": {"type": "raw", "default": ""},
    "gid_index": {"type": "raw"},
    "cabling": {"type": "dict", "default": {}},
}


def nccl_mesh_plugin_check(p: Mapping[str, Any]) -> Result:
    """The plugin's settings; plan: the decision (use_plugin, reason, nccl, env)."""
    errors = mp.settings_errors(
        nsocks=p["nsocks"], debug=p["debug"], gid_index=p["gid_index"], ifname=p["ifname"], prefix=p["prefix"]
    )
    if errors:
        return {"errors": errors, "plan": {}}
    try:
        decision = mp.decide(
            str(p["nccl_version"] or "").strip(),
            force=p["force"],
            transport=str(p["transport"]),
            ifname=str(p["ifname"] or ""),
            gid_index=p["gid_index"],
            nsocks=p["nsocks"],
            debug=p["debug"],
            cabling=p.get("cabling") or {},
        )
    except mp.NcclMeshPluginError as exc:
        return {"errors": [f"nccl_mesh_plugin: {exc}"], "plan": {}}
    return {"errors": [], "plan": decision}
