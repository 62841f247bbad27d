"""Explanations of diagnostic codes, for `flow explain`, `%explain` and the docs page.

Everything here is generated from `REGISTRY`, the single source. Regenerate the
reference page with:

    python -m flow_kernel.diagnostics.explain --write docs/diagnostics.md

(`--check docs/diagnostics.md` exits 1 when the page is out of date; without options
the page is printed.)
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence

from flow_kernel.diagnostics.registry import FAMILIES, REGISTRY, CodeInfo, lookup

REGENERATE = "python -m flow_kernel.diagnostics.explain --write docs/diagnostics.md"

_SEVERITY_LETTER = {"error": "E", "warning": "W", "info": "I"}


def _indent(text: str, prefix: str = "    ") -> str:
    return "\n".join(
        prefix + line if line.strip() else "" for line in text.strip("\n").splitlines()
    )


def explain_text(info: CodeInfo) -> str:
    """A `CodeInfo` as plain text for a terminal."""
    return "\n".join(
        [
            f"{info.code} ({info.severity.value}): {info.summary}",
            "",
            info.explanation.strip(),
            "",
            "Failing example:",
            "",
            _indent(info.failing),
            "",
            "Fixed:",
            "",
            _indent(info.fixed),
        ]
    )


def explain(code: str) -> str | None:
    """The explanation of `code` as text, or None for an unknown code."""
    info = lookup(code)
    return explain_text(info) if info is not None else None


def _fence(source: str, lang: str = "flow") -> str:
    longest = max((len(run) for run in re.findall(r"`+", source)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{lang}\n{source.strip(chr(10))}\n{ticks}"


def explain_markdown(info: CodeInfo, *, heading: str = "###") -> str:
    """A `CodeInfo` as a Markdown section (used by the docs page and `%explain`)."""
    return "\n".join(
        [
            f"{heading} {info.code}",
            "",
            f"**{info.severity.value}** — {info.summary}",
            "",
            info.explanation.strip(),
            "",
            "Failing example:",
            "",
            _fence(info.failing),
            "",
            "Fixed:",
            "",
            _fence(info.fixed),
        ]
    )


def _anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to `-`."""
    return re.sub(r"[^a-z0-9 _-]", "", heading.lower()).replace(" ", "-")


def docs_markdown() -> str:
    """The whole diagnostics reference page, grouped by family."""
    by_family: dict[str, list[CodeInfo]] = {family: [] for family in FAMILIES}
    for info in sorted(REGISTRY.values(), key=lambda i: i.code):
        by_family.setdefault(info.family, []).append(info)

    out = [
        "# Flow diagnostics reference",
        "",
        "<!-- Generated from the diagnostics registry; do not edit by hand. Regenerate with:",
        f"     {REGENERATE} -->",
        "",
        "Every diagnostic has a stable code, a severity (**error** stops code generation,",
        "**warning** and **info** do not), a primary span, a message, and optionally",
        "related spans and hints. `flow explain CODE` prints the same text as below.",
        "",
        "In a terminal:",
        "",
        "```",
        "triage.flow:12:7 [F2001] error: undefined name `triagr`",
        "  12 |   let r = triagr(ticket)",
        "     |           ^^^^^^",
        "  = hint: did you mean `triager`?",
        "```",
        "",
        '`flow check --format json` prints `{"diagnostics": [{"code", "severity",',
        '"message", "file", "span": {"start": {"line", "column"}, "end": {…}}, "related":',
        '[{"message", "file", "span"}], "hints": [...]}]}`, with 1-based lines and columns.',
        "",
        "## Families",
        "",
    ]
    for family, title in FAMILIES.items():
        count = len(by_family.get(family, []))
        heading = f"{family} — {title}"
        out.append(f"- [{heading}](#{_anchor(heading)}) ({count} codes)")
    for family, infos in by_family.items():
        if not infos:
            continue
        title = FAMILIES.get(family, family)
        out += ["", f"## {family} — {title}", "", "| code | severity | meaning |", "|---|---|---|"]
        for info in infos:
            summary = info.summary.replace("|", "\\|")
            out.append(
                f"| [{info.code}](#{info.code.lower()}) | {info.severity.value} | {summary} |"
            )
        for info in infos:
            out += ["", explain_markdown(info)]
    return "\n".join(out) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m flow_kernel.diagnostics.explain",
        description="Generate the diagnostics reference page from the registry.",
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--write", metavar="PATH", help="write the page to PATH")
    group.add_argument("--check", metavar="PATH", help="exit 1 if PATH is not up to date")
    args = parser.parse_args(argv)
    page = docs_markdown()
    if args.write is None and args.check is None:
        sys.stdout.write(page)
        return 0
    # The file system is the host's business: `diagnostics` itself stays pure.
    from flow_kernel.files import SourceReadError, read_text, write_text

    if args.write is not None:
        write_text(args.write, page)
        print(f"wrote {args.write} ({len(REGISTRY)} codes)")
        return 0
    try:
        current: str | None = read_text(args.check)
    except SourceReadError:
        current = None
    if current == page:
        return 0
    state = "missing" if current is None else "out of date"
    print(f"{args.check} is {state}; regenerate it with:\n    {REGENERATE}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
