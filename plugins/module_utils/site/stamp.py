# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""site.yml's fast path: is every node still as its last converge left it, with the same inputs?

Two halves. On the controller (module rdmaops.cluster.site_digest): a digest of every host's inventory
variables (as written, not templated), the extra vars and the collection's code. On the node (module
rdmaops.cluster.site_stamp): what the roles manage, observed (file digests, service states, installed
packages, venv distributions, data-port addresses, kernel and GPU driver), recorded at the end of a converge
and compared on the next run.
"""

from __future__ import annotations

import glob
import hashlib
import ipaddress
import json
import os
import re
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

STAMP_VERSION = 1

# Keys that every host's variables carry but that are not the inventory: they change with the machine, the
# mode or the command line of a run, not with what the cluster should look like.
MAGIC_VARS = frozenset(
    {
        "ansible_check_mode",
        "ansible_config_file",
        "ansible_diff_mode",
        "ansible_facts",
        "ansible_forks",
        "ansible_inventory_sources",
        "ansible_playbook_python",
        "ansible_run_tags",
        "ansible_skip_tags",
        "ansible_verbosity",
        "inventory_dir",
        "inventory_file",
        "inventory_hostname_short",
        "omit",
        "playbook_dir",
        # the switch that turns the fast path off must not itself make the next run a full one
        "rdmaops_fast_path",
    }
)

INPUTS_CHANGED = "the inventory, the extra vars or the collection's code changed since the last converge"
WATCH_KINDS = ("files", "services", "packages", "globs", "addresses")

Runner = Callable[[list[str]], tuple[int, str, str]]


class StampError(ValueError):
    """A bad input, named."""


def _plain(value: Any) -> Any:
    """JSON-able copy: mappings with str keys, lists, scalars; anything else as its text."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return str(value)


def inventory_digest(hosts: Mapping[str, Mapping[str, Any]], code: str) -> str:
    """sha256 over every host's variables (less MAGIC_VARS and facts) and the code digest.

    ``hosts`` maps inventory name -> that host's variables as written (ansible's ``hostvars.raw_get``),
    so a templated value counts by its text. Host order is part of ``groups`` and so of the digest.
    Compute it before any task of the run registers or sets a variable: those are host variables too (a
    registered result carries its start and end times), which is why it is site.yml's first task.
    """
    if not isinstance(code, str) or not code:
        raise StampError(f"inventory_digest: the code digest must be a non-empty string, got {code!r}")
    payload: dict[str, Any] = {"code": code, "hosts": {}}
    for name, variables in hosts.items():
        if not isinstance(variables, Mapping):
            raise StampError(f"inventory_digest: variables of {name!r} are not a mapping")
        # facts (from a fact cache) also appear as top-level ansible_<name> variables
        facts = variables.get("ansible_facts")
        fact_vars = {f"ansible_{k}" for k in facts} if isinstance(facts, Mapping) else set()
        fact_vars.add("ansible_local")
        payload["hosts"][str(name)] = {
            str(k): _plain(v)
            for k, v in variables.items()
            if str(k) not in MAGIC_VARS and str(k) not in fact_vars
        }
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _is_artefact(part: str) -> bool:
    """What builds and tools leave in a source tree (python_env's trainer tree leaves out the same)."""
    return (
        part in ("__pycache__", "build")
        or part.endswith(".egg-info")
        or bool(re.fullmatch(r"\.\w+_cache", part))
    )


def source_digest(root: str | Path, parts: Iterable[str]) -> str:
    """sha256 of the files under ``root/part`` for each part (paths, contents; no build artefacts)."""
    base = Path(root)
    h = hashlib.sha256()
    for part in parts:
        top = base / part
        if not top.exists():
            raise StampError(f"source_digest: {top} does not exist")
        files = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file())
        for path in files:
            rel = path.relative_to(base)
            if path.suffix == ".pyc" or any(_is_artefact(part) for part in rel.parts):
                continue
            data = path.read_bytes()
            h.update(str(rel).encode() + b"\0" + str(len(data)).encode() + b"\0" + data)
    return h.hexdigest()


# site_digest: the first task of site.yml (its action plugin reads the hosts' variables as written).
SITE_DIGEST_SPEC: dict[str, Any] = {
    "hosts": {"type": "list", "elements": "str", "required": True},
    "code_root": {"type": "path", "required": True},
    "code_parts": {"type": "list", "elements": "str", "default": ["roles", "plugins", "playbooks", "files"]},
}


def run_digest(
    hosts: Mapping[str, Mapping[str, Any]], code_root: str | Path, code_parts: Iterable[str]
) -> str:
    """The digest of a run's inputs: every host's variables and the collection's code under ``code_root``."""
    return inventory_digest(hosts, source_digest(code_root, code_parts))


def check_watch(watch: Any) -> dict[str, dict[str, list[str]]]:
    """role -> kind -> sorted unique names; names the role and kind of a bad entry."""
    if not isinstance(watch, Mapping):
        raise StampError(f"watch must map role names to what each role manages, got {type(watch).__name__}")
    out: dict[str, dict[str, list[str]]] = {}
    for role, kinds in watch.items():
        if kinds is None:
            continue
        if not isinstance(kinds, Mapping):
            raise StampError(f"watch of {role}: expected a mapping of {', '.join(WATCH_KINDS)}")
        entry: dict[str, list[str]] = {}
        for kind, names in kinds.items():
            if kind not in WATCH_KINDS:
                raise StampError(f"watch of {role}: unknown kind {kind!r} (known: {', '.join(WATCH_KINDS)})")
            if isinstance(names, str) or not isinstance(names, Iterable):
                raise StampError(f"watch of {role}: {kind} must be a list, got {names!r}")
            clean = set()
            for name in names:
                if not isinstance(name, str) or not name.strip():
                    raise StampError(f"watch of {role}: {kind} entry {name!r} is not a non-empty string")
                if kind in ("files", "globs") and not name.startswith("/"):
                    raise StampError(f"watch of {role}: {kind} entry {name!r} is not an absolute path")
                clean.add(name.strip())
            entry[kind] = sorted(clean)
        out[str(role)] = entry
    return out


def file_digest(path: str) -> str | None:
    """sha256 of a file's bytes; None when it does not exist (also lab_stamp's)."""
    h = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                h.update(block)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"unreadable: {exc.strerror}"
    return h.hexdigest()


def write_if_changed(path: str, text: str, check_mode: bool, move: Callable[[str, str], None]) -> bool:
    """Write a stamp atomically (``move`` is AnsibleModule.atomic_move) unless it already holds ``text``;
    whether it differed. Check mode writes nothing (also lab_stamp's)."""
    try:
        with open(path, encoding="utf-8") as handle:
            changed = handle.read() != text
    except OSError:
        changed = True
    if changed and not check_mode:
        directory = os.path.dirname(path)
        os.makedirs(directory, mode=0o755, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(path) + ".")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.chmod(tmp, 0o644)
            move(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    return changed


def parse_systemctl_show(text: str) -> dict[str, str]:
    """unit Id -> "ActiveState/UnitFileState" from ``systemctl show -p Id,ActiveState,UnitFileState``."""
    out: dict[str, str] = {}
    for block in re.split(r"\n\s*\n", text.strip()):
        props = dict(line.split("=", 1) for line in block.splitlines() if "=" in line)
        if props.get("Id"):
            out[props["Id"]] = f"{props.get('ActiveState', '')}/{props.get('UnitFileState', '') or '-'}"
    return out


def _unit_id(name: str) -> str:
    return name if "." in name else f"{name}.service"


def parse_ip_addr(text: str, ifnames: Iterable[str]) -> dict[str, list[str] | None]:
    """ifname -> sorted global addresses (addr/prefix) from ``ip -j addr``; None for a missing interface."""
    try:
        links = json.loads(text or "[]")
    except ValueError as exc:
        raise StampError(f"ip -j addr printed no JSON: {exc}") from exc
    by_name = {link.get("ifname"): link for link in links if isinstance(link, dict)}
    out: dict[str, list[str] | None] = {}
    for name in ifnames:
        link = by_name.get(name)
        if link is None:
            out[name] = None
            continue
        addrs = []
        for info in link.get("addr_info", []):
            local, plen = info.get("local"), info.get("prefixlen")
            if not local or plen is None:
                continue
            if ipaddress.ip_address(local).is_link_local:
                continue  # the kernel adds these itself
            addrs.append(f"{local}/{plen}")
        out[name] = sorted(addrs)
    return out


def node_identity(root: str = "/") -> dict[str, Any]:
    """What a converge decided on without the inventory saying so: kernel, OS release, CPUs, GPUs."""
    base = Path(root)
    os_release = {}
    try:
        for line in (base / "etc/os-release").read_text().splitlines():
            if "=" in line:
                key, value = line.split("=", 1)
                os_release[key] = value.strip().strip('"')
    except OSError:
        pass
    try:
        driver = (base / "proc/driver/nvidia/version").read_text().splitlines()[0].strip()
    except (OSError, IndexError):
        driver = None
    gpus = len([p for p in (base / "dev").glob("nvidia*") if re.fullmatch(r"nvidia\d+", p.name)])
    return {
        "kernel": os.uname().release,
        "os": f"{os_release.get('ID', '?')} {os_release.get('VERSION_ID', '?')}",
        "cpus": os.cpu_count(),
        "nvidia_driver": driver,
        "gpus": gpus,
    }


def observe(watch: Mapping[str, Mapping[str, list[str]]], run: Runner, root: str = "/") -> dict[str, Any]:
    """role -> kind -> name -> observed value, plus "node" -> node_identity()."""
    units = sorted({_unit_id(n) for kinds in watch.values() for n in kinds.get("services", [])})
    packages = sorted({n for kinds in watch.values() for n in kinds.get("packages", [])})
    ifnames = sorted({n for kinds in watch.values() for n in kinds.get("addresses", [])})

    services: dict[str, str] = {}
    if units:
        rc, out, err = run(["systemctl", "show", "--property=Id,ActiveState,UnitFileState", "--", *units])
        if rc != 0:
            raise StampError(f"systemctl show failed (rc={rc}): {err.strip()}")
        services = parse_systemctl_show(out)
    installed: set[str] = set()
    if packages:
        # rc 1 only says that some package is unknown to dpkg; those read as not installed
        out = run(["dpkg-query", "-W", "-f=${Package} ${db:Status-Status}\n", "--", *packages])[1]
        installed = {
            parts[0] for parts in (line.split() for line in out.splitlines()) if parts[1:] == ["installed"]
        }
    addresses: dict[str, list[str] | None] = {}
    if ifnames:
        rc, out, err = run(["ip", "-j", "addr", "show"])
        if rc != 0:
            raise StampError(f"ip -j addr show failed (rc={rc}): {err.strip()}")
        addresses = parse_ip_addr(out, ifnames)

    observed: dict[str, Any] = {"node": node_identity(root)}
    for role, kinds in watch.items():
        seen: dict[str, dict[str, Any]] = {}
        for kind, names in kinds.items():
            if kind == "files":
                seen[kind] = {n: file_digest(os.path.join(root, n.lstrip("/"))) for n in names}
            elif kind == "services":
                seen[kind] = {n: services.get(_unit_id(n), "missing/-") for n in names}
            elif kind == "packages":
                seen[kind] = {n: n.split(":", 1)[0] in installed for n in names}
            elif kind == "globs":
                seen[kind] = {
                    n: sorted(
                        "/" + os.path.relpath(p, root) if root != "/" else p
                        for p in glob.glob(os.path.join(root, n.lstrip("/")))
                    )
                    for n in names
                }
            elif kind == "addresses":
                seen[kind] = {n: addresses.get(n) for n in names}
        observed[role] = seen
    return observed


def _describe(role: str, kind: str, name: str, before: Any, after: Any) -> str:
    if kind == "files":
        if after is None:
            return f"{role}: {name} is gone"
        if before is None:
            return f"{role}: {name} appeared"
        return f"{role}: {name} changed"
    if kind == "services":
        return f"{role}: service {name} was {before}, is {after} (active/enabled)"
    if kind == "packages":
        return f"{role}: package {name} is {'installed again' if after else 'no longer installed'}"
    if kind == "globs":
        gone = sorted(set(before or []) - set(after or []))
        new = sorted(set(after or []) - set(before or []))
        parts = ([f"gone {', '.join(gone[:3])}"] if gone else []) + (
            [f"new {', '.join(new[:3])}"] if new else []
        )
        return f"{role}: {name}: {'; '.join(parts)}"
    return f"{role}: addresses of {name} were {before}, are {after}"


def differences(recorded: Mapping[str, Any], observed: Mapping[str, Any]) -> list[str]:
    """What differs between a stamp's observation and now, one line each, named."""
    out = []
    before_node, after_node = recorded.get("node", {}), observed.get("node", {})
    for key in sorted(set(before_node) | set(after_node)):
        if before_node.get(key) != after_node.get(key):
            out.append(f"node: {key} was {before_node.get(key)!r}, is {after_node.get(key)!r}")
    for role in sorted(set(recorded) | set(observed)):
        if role == "node":
            continue
        kinds_before, kinds_after = recorded.get(role, {}), observed.get(role, {})
        for kind in sorted(set(kinds_before) | set(kinds_after)):
            before, after = kinds_before.get(kind, {}), kinds_after.get(kind, {})
            for name in sorted(set(before) | set(after)):
                if before.get(name) != after.get(name):
                    out.append(_describe(role, kind, name, before.get(name), after.get(name)))
    return out


def read_stamp(path: str) -> tuple[dict[str, Any] | None, str | None]:
    """(stamp, None) or (None, why it cannot be used)."""
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        return (
            None,
            f"no stamp at {path}: site.yml has not converged this node (or the stamp was removed)",
        )
    except OSError as exc:
        return None, f"cannot read {path}: {exc.strerror}"
    try:
        stamp = json.loads(text)
    except ValueError:
        return None, f"{path} is not JSON"
    if not isinstance(stamp, dict) or stamp.get("version") != STAMP_VERSION:
        return None, f"{path} is not a version {STAMP_VERSION} stamp"
    return stamp, None


def check(
    path: str, digest: str, run: Runner, root: str = "/"
) -> tuple[bool, list[str], dict[str, Any] | None]:
    """(current, reasons, stamp): current when the digest matches and nothing watched differs."""
    stamp, why = read_stamp(path)
    if stamp is None:
        return False, [why or "no stamp"], None
    reasons = []
    if stamp.get("digest") != digest:
        reasons.append(
            "the inventory, the extra vars or the collection's code changed since the last converge"
        )
    try:
        watch = check_watch(stamp.get("watch", {}))
    except StampError as exc:
        return False, [f"{path}: {exc}"], stamp
    reasons.extend(differences(stamp.get("observed", {}), observe(watch, run, root)))
    return not reasons, reasons, stamp


def render(digest: str, watch: Mapping[str, Any], observed: Mapping[str, Any]) -> str:
    """The stamp file's text (no timestamp: the same converge writes the same bytes)."""
    body = {"version": STAMP_VERSION, "digest": digest, "watch": watch, "observed": observed}
    return json.dumps(body, indent=1, sort_keys=True) + "\n"
