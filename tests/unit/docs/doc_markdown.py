"""Reading Markdown docs for the doc tests: fenced blocks, the shell commands in them, sections."""

from __future__ import annotations

import re

SHELL_LANGS = {"sh", "bash", "shell", "console"}


def fenced_blocks(text: str) -> list[tuple[int, str | None, list[str]]]:
    """(first line number, language, lines) of each fenced block."""
    out: list[tuple[int, str | None, list[str]]] = []
    lang: str | None = None
    start, body = 0, []
    for no, line in enumerate(text.splitlines(), 1):
        fence = re.match(r"^\s*```(\S*)\s*$", line)
        if fence and lang is None:
            lang, start, body = fence.group(1), no + 1, []
        elif fence:
            out.append((start, lang, body))
            lang = None
        elif lang is not None:
            body.append(line)
    return out


def shell_commands(text: str) -> list[tuple[int, str]]:
    """(line number, command) of each command in the shell blocks: ``\\`` continuations joined, comment lines
    and a leading ``$ `` dropped."""
    cmds = []
    for start, lang, body in fenced_blocks(text):
        if lang not in SHELL_LANGS:
            continue
        pending, first = "", 0
        for off, line in enumerate(body):
            if not pending:
                if not line.strip() or line.lstrip().startswith("#"):
                    continue
                first = start + off
                line = line.removeprefix("$ ")
            if line.rstrip().endswith("\\"):
                pending += line.rstrip()[:-1].rstrip() + " "
                continue
            cmds.append((first, (pending + line.strip()).strip()))
            pending = ""
    return cmds


def sections(text: str, level: int) -> dict[str, str]:
    """Heading text -> the section's text (up to the next heading of the same or a higher level)."""
    out: dict[str, str] = {}
    title, lines, fenced = None, [], False
    for line in text.splitlines():
        fenced ^= bool(re.match(r"^\s*```", line))
        head = None if fenced else re.match(r"^(#+) (.*)$", line)
        if head and len(head.group(1)) <= level:
            if title is not None:
                out[title] = "\n".join(lines)
            title, lines = (head.group(2).strip() if len(head.group(1)) == level else None), []
        else:
            lines.append(line)
    if title is not None:
        out[title] = "\n".join(lines)
    return out
