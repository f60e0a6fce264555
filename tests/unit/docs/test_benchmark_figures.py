"""docs/benchmarks.md's "Current figures" tables and benchmarks/figures.json say the same thing, and every
figure follows from the raw output it names.

The raw per-call output left the tree; git keeps it at figures.json's ``results_commit``. Where that commit
is at hand (a full clone), each GPU figure is recomputed from the file it names, each lab figure's quote is
found in the doc of that commit, and each run_all.py command is checked against the arguments its
results.json recorded. A checkout without git history skips those (and says so); one with history but without
the commit fails, naming the commit that now holds the raw output.
"""

from __future__ import annotations

import functools
import json
import re
import shlex
import subprocess
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

import pytest
from doc_markdown import sections, shell_commands

ROOT = Path(__file__).resolve().parents[3]
DOC = ROOT / "docs" / "benchmarks.md"
SUMMARY = ROOT / "benchmarks" / "figures.json"
RESULTS = "benchmarks/gpu/results"
HEADER = ["figure", "value", "machine", "date", "source"]
FIELDS = ["capability", "figure", "value", "unit", "machine", "date", "ref", "commands", "derive"]

SUMMARY_DATA: dict[str, Any] = json.loads(SUMMARY.read_text(encoding="utf-8"))
FIGURES: list[dict[str, Any]] = SUMMARY_DATA["figures"]


def rendered(fig: dict[str, Any]) -> str:
    """The value as the doc's table prints it: symbols right after the number, words after a space."""
    unit = fig["unit"]
    return fig["value"] + (unit if unit in {"%", "x"} else f" {unit}")


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def current_sections() -> dict[str, str]:
    text = DOC.read_text(encoding="utf-8")
    top = sections(text, 2)
    assert "Current figures" in top, "docs/benchmarks.md has no '## Current figures' section"
    return sections(top["Current figures"], 3)


def doc_rows() -> list[tuple[str, ...]]:
    """(capability, figure, value, machine, date, source) of every row of every figures table."""
    rows = []
    for title, body in current_sections().items():
        lines = body.splitlines()
        for i, line in enumerate(lines):
            if line.startswith("|") and _cells(line) == HEADER:
                for row in lines[i + 2 :]:
                    if not row.startswith("|"):
                        break
                    cells = _cells(row)
                    assert len(cells) == len(HEADER), f"{title}: {row!r} has {len(cells)} cells"
                    rows.append((title, *cells))
    return rows


def summary_rows() -> list[tuple[str, ...]]:
    return [(f["capability"], f["figure"], rendered(f), f["machine"], f["date"], f["ref"]) for f in FIGURES]


def test_summary_entries_are_complete() -> None:
    for fig in FIGURES:
        assert list(fig) == FIELDS, f"{fig.get('figure')}: fields {list(fig)}, expected {FIELDS}"
        assert re.fullmatch(r"2\d{3}-\d\d-\d\d", fig["date"]), fig
        assert fig["commands"] and all(isinstance(c, str) and c for c in fig["commands"]), fig
        assert fig["derive"]["from"], fig


def test_doc_tables_and_summary_agree() -> None:
    doc, summary = doc_rows(), summary_rows()
    assert len(doc) > 20, "found too few figure rows: is the table parsing broken?"
    assert len(set(doc)) == len(doc), "a figure row appears twice in the doc"
    missing = [r for r in doc if r not in summary]
    extra = [r for r in summary if r not in doc]
    assert not missing, "rows of docs/benchmarks.md without the same entry in benchmarks/figures.json:\n" + (
        "\n".join(map(str, missing))
    )
    assert not extra, "entries of benchmarks/figures.json without the same row in docs/benchmarks.md:\n" + (
        "\n".join(map(str, extra))
    )


def _norm(cmd: str) -> str:
    return " ".join(cmd.split())


def test_every_figure_command_is_in_its_section() -> None:
    secs = current_sections()
    for fig in FIGURES:
        shown = {_norm(raw) for _lineno, raw in shell_commands(secs[fig["capability"]])}
        for cmd in fig["commands"]:
            assert _norm(cmd) in shown, (
                f"{fig['figure']}: its command is not in a sh block of its section: {cmd}"
            )


# ---- the raw output, from git history


@functools.cache
def _git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)


@functools.cache
def results_commit(commit: str = "") -> str:
    """figures.json's results_commit, or a figure's own (derive.commit: output recorded after that one)."""
    commit = commit or SUMMARY_DATA["results_commit"]
    if _git("rev-parse", "--git-dir").returncode != 0:
        pytest.skip("not a git checkout: the raw output is in git history only")
    if _git("cat-file", "-e", f"{commit}^{{commit}}").returncode != 0:
        if _git("rev-parse", "--is-shallow-repository").stdout.strip() == "true":
            pytest.skip(f"a shallow clone: results_commit {commit} is not fetched")
        removal = _git("rev-list", "-1", "HEAD", "--", RESULTS).stdout.strip()
        pytest.fail(
            f"results_commit {commit} is not in this repository's history (rebased?); "
            f"the raw output was last at {removal}^ ({_git('rev-parse', removal + '^').stdout.strip()})"
        )
    return commit


@functools.cache
def raw_file(path: str, commit: str = "") -> str:
    at = results_commit(commit)
    res = _git("show", f"{at}:{path}")
    assert res.returncode == 0, f"{path} is not in {at}: {res.stderr}"
    return res.stdout


def _select(doc: Any, path: list[Any]) -> Any:
    for step in path:
        if isinstance(step, dict):
            found = [item for item in doc if all(item.get(k) == v for k, v in step.items())]
            assert len(found) == 1, f"{step} matches {len(found)} items"
            doc = found[0]
        else:
            doc = doc[step]
    return doc


def _raw_value(src: dict[str, Any], commit: str = "") -> float:
    text = raw_file(src["file"], commit)
    doc = (
        [json.loads(ln) for ln in text.splitlines() if ln.strip()]
        if src["file"].endswith(".jsonl")
        else json.loads(text)
    )
    value = _select(doc, src["select"])
    assert isinstance(value, int | float), f"{src}: {value!r} is not a number"
    return float(value)


def derived(fig: dict[str, Any]) -> list[float]:
    rule = fig["derive"]
    vals = [_raw_value(src, rule.get("commit", "")) for src in rule["from"]]
    if rule["op"] == "ratio":
        assert len(vals) == 2, fig
        vals = [vals[0] / vals[1]]
    elif rule["op"] == "range":
        vals = [min(vals), max(vals)]
    else:
        assert rule["op"] in {"value", "each"}, f"{fig['figure']}: unknown op {rule['op']}"
    return [v * rule.get("scale", 1) for v in vals]


def numbers(text: str) -> list[str]:
    return [n.replace(",", "") for n in re.findall(r"\d[\d,]*(?:\.\d+)?", text)]


def _rounded_as(value: float, shown: str) -> Decimal:
    places = Decimal(1).scaleb(-len(shown.partition(".")[2]))
    return Decimal(repr(value)).quantize(places, rounding=ROUND_HALF_UP)


@pytest.mark.parametrize("fig", FIGURES, ids=lambda f: f["figure"])
def test_figure_follows_from_its_raw_output(fig: dict[str, Any]) -> None:
    shown = numbers(fig["value"])
    if fig["derive"]["op"] == "quote":
        # lab figures: the line of the doc (at results_commit, or the figure's own commit) that recorded them,
        # holding every number shown
        for src in fig["derive"]["from"]:
            text = raw_file(src["file"], fig["derive"].get("commit", ""))
            assert src["quote"] in text, f"quote not in {src['file']}: {src['quote']}"
            assert all(n in numbers(src["quote"]) for n in shown), f"{fig['value']} not in {src['quote']!r}"
        return
    got = derived(fig)
    assert len(got) == len(shown), f"{fig['figure']}: {len(shown)} numbers shown, {len(got)} derived"
    for n, value in zip(shown, got, strict=True):
        assert _rounded_as(value, n) == Decimal(n), (
            f"{fig['figure']}: shows {n}, the raw output gives {value}"
        )


def _options(cmd: str) -> dict[str, Any]:
    """run_all.py's options in a command line, named as argparse stores them."""
    argv = shlex.split(cmd)
    argv = argv[argv.index("benchmarks/gpu/run_all.py") + 1 :]
    opts: dict[str, Any] = {}
    for i, word in enumerate(argv):
        if word.startswith("--"):
            takes = i + 1 < len(argv) and not argv[i + 1].startswith("--")
            opts[word[2:].replace("-", "_")] = argv[i + 1] if takes else True
    return opts


def test_run_all_commands_are_the_ones_recorded() -> None:
    for fig in FIGURES:
        files = {s["file"] for s in fig["derive"]["from"] if s["file"].endswith("results.json")}
        cmds = [_options(c) for c in fig["commands"] if "benchmarks/gpu/run_all.py" in c]
        for path in sorted(files):
            args = json.loads(raw_file(path))["args"]
            args["out"] = args["out"].replace("/root/out", "$OUT")
            assert any(all(str(args.get(k)) == str(v) for k, v in opts.items()) for opts in cmds), (
                f"{fig['figure']}: no command matches the arguments recorded in {path}"
            )


def test_raw_output_left_the_tree_after_results_commit() -> None:
    assert not (ROOT / RESULTS).exists(), f"{RESULTS} is back in the tree: raw output stays in git history"
    commit = results_commit()
    assert _git("cat-file", "-e", f"{commit}:{RESULTS}").returncode == 0, f"{commit} has no {RESULTS}"
    # the last removal follows the newest raw output some figure names
    named = {commit} | {results_commit(f["derive"]["commit"]) for f in FIGURES if f["derive"].get("commit")}
    removal = _git("rev-list", "-1", "HEAD", "--", RESULTS).stdout.strip()
    assert _git("rev-parse", f"{removal}^").stdout.strip() in named, (
        f"the commit before {RESULTS} was last removed ({removal}^) should be one that figures.json names"
    )
