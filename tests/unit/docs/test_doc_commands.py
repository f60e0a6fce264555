"""Every shell command in README.md and docs/ runs as written, or is named here with why it cannot run in a
unit test (root, a lab, a GPU machine, a real cluster).

The commands come from the ```sh / ```bash blocks (``\\`` continuations joined, comments dropped). Each one
must match exactly one rule below; a new command that matches none fails the test, so a doc cannot gain a
command nobody tried. What the rules do:

- ``run``: executed with bash in a scratch directory (or the repo root for repo-relative paths), must exit 0;
- ``syntax``: an ``ansible-playbook`` line, run with ``--syntax-check`` (an ``inventories/<name>``
  placeholder becomes the example mesh inventory), every ``-e recipe=NAME`` must be a shipped recipe;
- ``make``: ``make -n`` of the same line (the targets and variables exist; nothing is built);
- ``skip``: not run here (the reason says why), but the program it names must exist in the repo.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from doc_markdown import fenced_blocks, shell_commands

ROOT = Path(__file__).resolve().parents[3]
VENV_BIN = Path(sys.executable).parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted(ROOT.glob("roles/*/README.md"))]
# first words that make an unlabelled block look like commands (it must then say sh or text)
COMMAND_WORDS = {
    "ansible-playbook",
    "ansible",
    "make",
    "python",
    "python3",
    "pip",
    "source",
    ".venv/bin/python",
}

ROOT_LAB = "needs root and builds or uses a lab (molecule and tests/ cover it)"
CLUSTER = "needs a real cluster inventory"
GPU = "needs a GPU machine (benchmarks/gpu; docs/benchmarks.md has its numbers)"


@dataclass(frozen=True)
class Rule:
    pattern: str
    kind: str  # run | syntax | make | skip
    why: str = ""


RULES = [
    # the training example of the README: runs twice, the second time it must say the run is complete
    Rule(r"^python -m torch\.distributed\.run --standalone ", "run"),
    Rule(r"^python -m torch\.distributed\.run --nnodes ", "skip", "a multi-node template (R, ADDR)"),
    Rule(r"^python -m rdmaops_trainer --recipe NAME", "skip", "a template (NAME)"),
    Rule(r"^python -m rdmaops_trainer ", "run"),
    Rule(r"^make venv( |$)", "run"),
    Rule(r"^source \.venv/bin/activate", "run"),
    Rule(r"^make (demo|test|lab-up|lab-down|plugin-test)\b", "make"),
    Rule(r"^make -C files/plugin_src", "run"),
    Rule(r"^ansible-playbook .*playbooks/lab\.yml", "skip", ROOT_LAB),
    Rule(r"^ansible-playbook ", "syntax"),
    Rule(r"^ansible -i inventories/lab ", "skip", ROOT_LAB),
    Rule(r"^ip netns exec ", "skip", ROOT_LAB),
    Rule(r"^(\.venv/bin/python|python3?) benchmarks/gpu/run_all\.py --list", "run"),
    Rule(
        r"^python3? benchmarks/gpu/run_all\.py --tiny --device cpu",
        "skip",
        "a CPU run of every benchmark row: minutes",
    ),
    Rule(r"^(\w+=\S+ )*(\.venv/bin/python |python3? )?benchmarks/gpu/", "skip", GPU),
    # a wheel carried to the GPU machine (the device's venv), installed there before a benchmark call
    Rule(r"^python3? -m pip install --no-deps '?\.whl/", "skip", GPU),
    # the data network's plan on the controller: plain Python, seconds (the figures' run: each row 3 times)
    Rule(r"^(\.venv/bin/python |python3? )?benchmarks/fabric_plan\.py .*--repeat", "skip", "each row 3x"),
    Rule(r"^(\.venv/bin/python |python3? )?benchmarks/fabric_plan\.py", "run"),
    Rule(r"^(\.venv/bin/python |python3? )?(scripts|benchmarks|tests)/\S+", "skip", ROOT_LAB),
    Rule(r"^(\w+=\S+ )+scripts/\S+", "skip", ROOT_LAB),
]


@dataclass(frozen=True)
class DocCommand:
    where: str  # file:line
    raw: str  # as written, continuations joined; bash runs this

    @property
    def argv(self) -> list[str]:
        return shlex.split(self.raw, comments=True)

    @property
    def text(self) -> str:
        """The command without its comment, quoted back where needed (what the rules match)."""
        return shlex.join(self.argv)

    def __str__(self) -> str:
        return f"{self.where}: {self.text}"


def doc_commands() -> list[DocCommand]:
    cmds = []
    for path in DOCS:
        rel = path.relative_to(ROOT)
        for line, raw in shell_commands(path.read_text(encoding="utf-8")):
            cmds.append(DocCommand(f"{rel}:{line}", raw))
    return cmds


def rule_for(cmd: DocCommand) -> Rule:
    found = [r for r in RULES if re.search(r.pattern, cmd.text)]
    if not found:
        raise AssertionError(f"{cmd}: no rule in {__file__} says how to run this command; add one")
    return found[0]


COMMANDS = doc_commands()


def _env() -> dict[str, str]:
    env = dict(os.environ)
    # `python`, `ansible-playbook` in the docs are the project venv's, as after `source .venv/bin/activate`
    env["PATH"] = f"{VENV_BIN}:{env.get('PATH', '')}"
    env["ANSIBLE_CONFIG"] = str(ROOT / "ansible.cfg")
    env.pop("WORLD_SIZE", None)
    env.pop("RANK", None)
    return env


def _run(argv: list[str], cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=timeout, check=False
    )


def test_every_doc_command_has_a_rule() -> None:
    assert len(COMMANDS) > 40, "the extractor found too few commands: is the fence parsing broken?"
    missing = []
    for cmd in COMMANDS:
        try:
            rule_for(cmd)
        except AssertionError as exc:
            missing.append(str(exc))
    assert not missing, "\n".join(missing)


def test_unlabelled_blocks_are_not_commands() -> None:
    # a block of commands without ```sh would escape this test: label it sh (commands) or text (a transcript)
    bad = []
    for path in DOCS:
        for start, lang, body in fenced_blocks(path.read_text(encoding="utf-8")):
            words = {ln.split()[0] for ln in body if ln.strip()}
            if not lang and words & COMMAND_WORDS:
                bad.append(f"{path.relative_to(ROOT)}:{start}")
    assert not bad, f"unlabelled blocks holding commands (label them sh or text): {bad}"


def _ids(kind: str) -> list[DocCommand]:
    # a command without a rule is reported by test_every_doc_command_has_a_rule, not at collection
    return [
        c for c in COMMANDS if any(re.search(r.pattern, c.text) for r in RULES) and rule_for(c).kind == kind
    ]


@pytest.mark.parametrize("cmd", _ids("skip"), ids=str)
def test_skipped_commands_name_programs_that_exist(cmd: DocCommand) -> None:
    words = [w for w in cmd.argv if not re.match(r"^\w+=", w)]
    if words[0] in {"python", "python3", ".venv/bin/python"}:
        words = words[1:]
    prog = words[0]
    if "/" in prog and not prog.startswith("<"):
        assert (ROOT / prog).is_file(), f"{cmd}: {prog} does not exist"
    if prog == "ansible-playbook":
        for w in words[1:]:
            if w.endswith(".yml") and "/" in w:
                assert (ROOT / w).is_file(), f"{cmd}: {w} does not exist"


_NO_GOAL = ".rdmaops-no-such-goal"


@functools.cache
def _make_targets() -> frozenset[str]:
    """The Makefile's targets, from make's database with a goal that does not exist, so that no recipe runs:
    `make -n test` would run test's recipe, which calls $(MAKE) (make runs such lines even with -n), and
    overwrite the logs of a make test in progress."""
    res = _run(["make", "--print-data-base", "--question", _NO_GOAL], ROOT)
    # "make[2]: ..." when the suite runs under make test
    nothing_else = rf"make(\[\d+\])?: \*\*\* No rule to make target '{re.escape(_NO_GOAL)}'\.  Stop\."
    assert re.fullmatch(nothing_else, res.stderr.strip()), res.stderr[-2000:]
    return frozenset(m.group(1) for m in re.finditer(r"^([A-Za-z][\w.-]*):(?!=)", res.stdout, re.MULTILINE))


def test_make_targets_are_read_from_makes_database() -> None:
    phony = next(line for line in (ROOT / "Makefile").read_text().splitlines() if line.startswith(".PHONY:"))
    declared = set(phony.split(":", 1)[1].split())
    assert declared and declared <= _make_targets(), declared - _make_targets()
    assert _NO_GOAL not in _make_targets() and "deps-typo" not in _make_targets()


@pytest.mark.parametrize("cmd", _ids("make"), ids=str)
def test_make_targets_exist(cmd: DocCommand) -> None:
    goals = [w for w in cmd.argv[1:] if "=" not in w and not w.startswith("-")]
    assert goals, f"{cmd}: no target"
    missing = [g for g in goals if g not in _make_targets()]
    assert not missing, f"{cmd}: no such make target: {missing}"


@functools.cache
def _recipes() -> frozenset[str]:
    res = _run([str(VENV_BIN / "python"), "-m", "rdmaops_trainer", "--list"], ROOT)
    assert res.returncode == 0, res.stderr
    return frozenset(res.stdout.split())


@pytest.mark.parametrize("cmd", _ids("syntax"), ids=str)
def test_playbook_commands_parse(cmd: DocCommand) -> None:
    argv = [w.replace("inventories/<name>", "inventories/mesh") for w in cmd.argv]
    assert all("<" not in w for w in argv), f"{cmd}: a placeholder other than inventories/<name>"
    for i, w in enumerate(argv):
        if w == "-e" and argv[i + 1].startswith("recipe="):
            name = argv[i + 1].split("=", 1)[1]
            assert name in _recipes(), f"{cmd}: recipe {name!r} is not shipped"
    res = _run([*argv, "--syntax-check"], ROOT, timeout=300)
    assert res.returncode == 0, f"{cmd}: --syntax-check failed:\n{res.stdout[-1500:]}\n{res.stderr[-1500:]}"


@pytest.mark.parametrize("cmd", _ids("run"), ids=str)
def test_cheap_commands_run(cmd: DocCommand, tmp_path: Path) -> None:
    argv = cmd.argv
    repo_relative = any(w.startswith(("files/", "benchmarks/", ".venv/", "./")) for w in argv) or argv[0] in {
        "make",
        "source",
    }
    cwd = ROOT if repo_relative else tmp_path
    res = _run(["bash", "-c", cmd.raw], cwd)
    assert res.returncode == 0, f"{cmd}: exit {res.returncode}\n{res.stdout[-2000:]}\n{res.stderr[-2000:]}"
    if "torch.distributed.run --standalone" in cmd.text:
        assert "[end] step=" in res.stdout and "nan" not in res.stdout, res.stdout[-2000:]
        again = _run(["bash", "-c", cmd.raw], cwd)
        assert again.returncode == 0 and "is already complete at step" in again.stdout, again.stdout[-2000:]
    assert not list(ROOT.glob("runs")), f"{cmd}: left runs/ in the repo"


def test_readme_lists_every_recipe_and_the_default_inventory() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    listed = re.search(r"recipes ((?:`[^`]+`,?\s*)+)", readme)
    assert listed, "README.md no longer lists the recipes ('recipes `a`, `b`, ...')"
    assert set(re.findall(r"`([^`]+)`", listed.group(1))) == _recipes()
    # ansible-playbook without -i uses ansible.cfg's inventory: the README must name it
    cfg = re.search(r"^inventory\s*=\s*(\S+)", (ROOT / "ansible.cfg").read_text(), re.M)
    assert cfg and f"Without `-i`, `ansible.cfg` points at `{cfg.group(1)}`" in readme


def test_what_the_readme_commands_leave_is_ignored_by_git() -> None:
    # training output, and what `pip install ./files/trainer` (non-editable) builds next to the source
    left = [
        "runs/tiny/metrics.jsonl",
        "files/trainer/build/lib/x.py",
        "files/trainer/rdmaops_trainer.egg-info/PKG-INFO",
    ]
    res = subprocess.run(
        ["git", "check-ignore", *left], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert res.stdout.split() == left, (
        f"not ignored by .gitignore: {sorted(set(left) - set(res.stdout.split()))}"
    )
