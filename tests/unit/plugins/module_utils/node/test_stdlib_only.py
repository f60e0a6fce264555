"""The rule of plugins/module_utils/node/: every file there runs on the nodes as source, so it imports only
the standard library and the files that travel with it. Imports are read with ast (inside functions too); an
import that names its module by a computed string (importlib) is not seen."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import pytest
import yaml

from ...conftest import ROOT, ad_hoc

NODE = ROOT / "plugins" / "module_utils" / "node"
SLURM_VARS = ROOT / "roles" / "slurm" / "vars" / "main.yml"
# The HealthCheckProgram's launcher runs on the nodes too; it loads the health package by path and name.
LAUNCHER = ROOT / "files" / "health" / "rdmaops-health"


def slurm_tree() -> set[Path]:
    """What the slurm role copies to its health library as one tree: its globs of node/'s files."""
    globs = yaml.safe_load(SLURM_VARS.read_text())["_slurm_health_code"]
    return {path for pattern in globs for path in NODE.glob(pattern)}


def travels_with(path: Path) -> set[Path]:
    """The files shipped with PATH: the slurm role's tree for a file of it, else PATH alone (the train role
    sends agent.py and supervisor.py one at a time; an __init__.py outside the tree is not shipped)."""
    tree = slurm_tree()
    return tree if path in tree else {path}


def _loaded(path: Path, node: ast.ImportFrom, root: Path) -> list[Path]:
    """The files a relative ``from`` import loads: the module, or the package's __init__.py and each named
    submodule. Raises ValueError for an import out of ROOT or one that names no file."""
    base = path.parents[node.level - 1]  # level 1: the file's own package
    target = base.joinpath(*node.module.split(".")) if node.module else base
    if root not in (target, *target.parents):
        raise ValueError(f"climbs out of {root.name}/ to {target}")
    if target.with_suffix(".py").is_file():
        return [target.with_suffix(".py")]
    if not (target / "__init__.py").is_file():
        raise ValueError(f"names no file of {root.name}/ ({target.relative_to(root)})")
    subs = [target / f"{alias.name}.py" for alias in node.names]
    return [target / "__init__.py", *(sub for sub in subs if sub.is_file())]


def foreign_imports(path: Path, shipped: set[Path], root: Path = NODE) -> list[str]:
    """Each import of PATH that is neither the standard library nor a file of SHIPPED, with its line."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.level > 0:
            what = f"from {'.' * node.level}{node.module or ''} import"
            try:
                loaded = _loaded(path, node, root)
            except ValueError as exc:
                found.append((node.lineno, f"{what}: {exc}"))
                continue
            found += [
                (node.lineno, f"{what}: {file.relative_to(root)} does not travel with this file")
                for file in loaded
                if file not in shipped
            ]
            continue
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        else:
            continue
        found += [
            (node.lineno, f"import {name}: not the standard library")
            for name in names
            if name.split(".")[0] not in sys.stdlib_module_names
        ]
    return [f"line {line}: {text}" for line, text in sorted(found)]


@pytest.mark.parametrize("path", sorted(NODE.rglob("*.py")), ids=lambda p: str(p.relative_to(NODE)))
def test_node_file_imports_only_the_standard_library_and_what_travels_with_it(path: Path) -> None:
    found = foreign_imports(path, travels_with(path))
    assert not found, "\n".join([f"{path.relative_to(ROOT)} runs on the nodes, as source:", *found])


def test_the_launcher_imports_only_the_standard_library() -> None:
    found = foreign_imports(LAUNCHER, {LAUNCHER})
    assert not found, "\n".join([f"{LAUNCHER.relative_to(ROOT)} runs on the nodes:", *found])


def test_the_rule_names_what_would_break_on_a_node(tmp_path: Path) -> None:
    """A third-party import inside a function, a sibling that does not travel with the file, a relative
    import out of node/, one that names no file; the standard library and siblings that travel with the file
    (a package's __init__.py with its module) pass."""
    root = tmp_path / "node"
    (root / "train").mkdir(parents=True)
    (root / "health").mkdir()
    for name in ("train/__init__.py", "train/other.py", "health/__init__.py", "health/findings.py"):
        (root / name).write_text("")
    agent = root / "train" / "agent.py"
    agent.write_text(
        "import json, os.path\nfrom collections import abc\nfrom . import other\n"
        "def f():\n    import yaml\n    from ..health import findings\n    from ...x import y\n"
        "    from .gone import z\n"
    )
    shipped = {agent, root / "train" / "__init__.py", root / "train" / "other.py"}
    assert foreign_imports(agent, shipped, root) == [
        "line 5: import yaml: not the standard library",
        "line 6: from ..health import: health/__init__.py does not travel with this file",
        "line 6: from ..health import: health/findings.py does not travel with this file",
        f"line 7: from ...x import: climbs out of node/ to {tmp_path / 'x'}",
        "line 8: from .gone import: names no file of node/ (train/gone)",
    ]


def test_the_slurm_role_copies_its_packages_to_the_same_paths_as_before() -> None:
    """The role's _slurm_health_tree as Ansible renders it: each file of the health and rdma packages and
    values.py at its path under node/, which is its path under the health library on the node
    (files/health/rdmaops-health imports health.cli there)."""
    proc = ad_hoc(
        "ansible.builtin.debug",
        "var=_slurm_health_tree",
        "-e",
        f"@{SLURM_VARS}",
        "-e",
        f"role_path={ROOT / 'roles' / 'slurm'}",
        ANSIBLE_STDOUT_CALLBACK="ansible.posix.json",
        ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(proc.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]
    tree = {item["path"]: Path(item["src"]).resolve() for item in result["_slurm_health_tree"]}
    assert tree == {str(path.relative_to(NODE)): path for path in slurm_tree()}
    assert {"health/cli.py", "health/node.py", "rdma/__init__.py", "rdma/sysfs.py", "values.py"} <= set(tree)
