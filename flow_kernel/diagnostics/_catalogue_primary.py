"""Codes beyond the normative catalogue: the primary artifact (`publish primary NAME e`,
docs/language-guide.md "Artifacts"). Registered through `catalogue._ADDED`; the number is
this topic's, in the limits family (F6010)."""

from __future__ import annotations

# (code, severity letter E/W/I, one-line summary, explanation, failing example, fixed example)
ENTRIES: tuple[tuple[str, str, str, str, str, str], ...] = (
    (
        "F6010",
        "E",
        "a second `publish primary` on one path",
        """\
A run has at most one primary artifact: the document it is for, which the run
view and the summary show first, `flow run --format json` returns as `primary`,
and `flow serve` hands back as the A2A task's final artifact and the MCP tool's
main content. Here one workflow body (or the top level) reaches two `publish
primary` statements on one path, so the second could only fail. Publish the
other artifacts without `primary`, or put the two in the two arms of one `if`
(or after an arm that returns). A second primary artifact the checker cannot
see (in a loop, a lambda, an `async` body, a function, a workflow called twice)
stops the run with `limit-exceeded`.""",
        """\
let draft = "# Release notes"
publish primary "notes.md" draft
publish primary "notes-short.md" "v2"
""",
        """\
let draft = "# Release notes"
publish primary "notes.md" draft
publish "notes-short.md" "v2"
""",
    ),
)
