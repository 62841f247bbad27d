"""The prompt files `flow serve --mcp` serves as MCP prompts (docs/protocols.md, "Prompts").

A served file's prompts are the Markdown files directly in the `prompts` folder beside it
(`prompts/triage.md` is the prompt `triage`), read once when the server starts. A prompt's
arguments are its `{{name}}` placeholders (lang/prompt_files.py, the ones `file(PATH, {…})`
fills in a workflow); `prompts/get` fills them with the client's text as given (the prompt
is the client's to use), in one pass, and answers the text as one user message. The
description is the file's first line when it is a Markdown heading.

Only what is plainly the person's is read: a regular file (no link, no folder) in a
`prompts` folder that is no link either, named with letters, digits, `_` and `-`, at most
`MAX_PROMPT_BYTES` of UTF-8. Everything else is left out, said once on stderr by `flow
serve`. Names, descriptions and arguments reach a client as text fields (MCP renders
nothing), and a value given for one argument is never read for placeholders again.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from flow_kernel.lang.prompt_files import placeholders, template_parts
from flow_kernel.short_text import shorten

PROMPTS_FOLDER = "prompts"
MAX_PROMPT_BYTES = 256 * 1024
MAX_PROMPTS = 200
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")


class PromptArgumentsError(ValueError):
    """`prompts/get` with an argument missing or one the prompt does not have."""


@dataclass(frozen=True)
class ServedPrompt:
    name: str
    description: str
    text: str
    arguments: tuple[str, ...]

    def render(self, given: dict[str, str] | None) -> str:
        """The text with every argument filled in; each argument must be given, and no other."""
        values = dict(given or {})
        missing = [a for a in self.arguments if a not in values]
        unknown = sorted(set(values) - set(self.arguments))
        if missing or unknown:
            said = ([f"missing {', '.join(missing)}"] if missing else []) + (
                [f"unknown {', '.join(unknown)}"] if unknown else [])
            takes = ", ".join(self.arguments) or "no arguments"
            raise PromptArgumentsError(f"prompt `{self.name}`: {'; '.join(said)} (it takes {takes})")
        parts = template_parts(self.text, list(self.arguments))
        return "".join(p if isinstance(p, str) else str(values[self.arguments[p]]) for p in parts)


def read_prompts(folder: Path) -> tuple[dict[str, ServedPrompt], list[str]]:
    """The prompts of `folder/prompts`, by name in name order, and what was left out and why."""
    where = folder / PROMPTS_FOLDER
    skipped: list[str] = []
    if where.is_symlink():
        return {}, [f"{PROMPTS_FOLDER}/: a link (links are not followed)"]
    try:
        entries = sorted(os.scandir(where), key=lambda e: e.name)
    except OSError:
        return {}, skipped
    found: dict[str, ServedPrompt] = {}
    for entry in entries:
        if not entry.name.endswith(".md"):
            continue
        name = entry.name[:-3]
        problem = _problem(entry, name) or (f"more than {MAX_PROMPTS} prompts" if len(found) >= MAX_PROMPTS else None)
        text = None
        if problem is None:
            try:
                text = _read(Path(entry.path))
            except (OSError, UnicodeDecodeError, ValueError) as exc:
                problem = str(exc)
        if problem is not None or text is None:
            skipped.append(f"{PROMPTS_FOLDER}/{entry.name}: {problem}")
            continue
        found[name] = ServedPrompt(name, _description(text, name), text, tuple(placeholders(text)))
    return found, skipped


def _problem(entry: os.DirEntry[str], name: str) -> str | None:
    if not _NAME.fullmatch(name):
        return "a prompt's name is letters, digits, '_' and '-'"
    if entry.is_symlink() or not entry.is_file(follow_symlinks=False):
        return "not a regular file (links are not followed)"
    return None


def _read(path: Path) -> str:
    """The file's text, opened without following a link (one swapped in after the listing)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
            raise ValueError("not a regular file")
        data = file.read(MAX_PROMPT_BYTES + 1)
    if len(data) > MAX_PROMPT_BYTES:
        raise ValueError(f"larger than {MAX_PROMPT_BYTES} bytes")
    return data.decode("utf-8")


def _description(text: str, name: str) -> str:
    """The first line when it is a Markdown heading (`# Triage a ticket`), else the file's name."""
    first = text.lstrip("\ufeff").split("\n", 1)[0].strip()
    heading = first.lstrip("#").strip() if first.startswith("#") else ""
    return shorten(" ".join(heading.split()), 200) if heading else f"The prompt file {PROMPTS_FOLDER}/{name}.md."
