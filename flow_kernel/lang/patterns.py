"""Every regular expression a program supplies (a `pattern` constraint, a raw schema's
`pattern`/`patternProperties`, a scripted agent's `when("/re/", …)`) runs on RE2, whose
matching time is linear in the text: Python's `re` backtracks, and `^(a+)+$` against 30
characters takes tens of seconds, on the kernel's loop, in `flow check` and in output
validation alike.

RE2 has no back-references and no lookaround; a pattern that needs them is refused when
the program is checked (F3013 for a constraint, F3016 in a raw schema, F4017 in `when`), so nothing at run time meets one. Compiling is pure (no
I/O), so the checker may use this module."""

from __future__ import annotations

import functools
import re

import re2  # type: ignore[import-untyped]  # google-re2 ships no type information

# RE2's own size cap (8 MiB of program) stays: a pattern over it is refused, not grown.
_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # the reason comes back in the exception; nothing on stderr


class PatternError(ValueError):
    """A pattern RE2 cannot run. `unsupported` is true when it is a valid regular
    expression elsewhere (Python's `re`, ECMA-262) that uses what RE2 lacks."""

    def __init__(self, reason: str, *, unsupported: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.unsupported = unsupported


# RE2's words for what it refuses -> what a person should read
_REASONS = (
    ("invalid escape sequence: \\u", "`\\u` escapes are not supported (write `\\x{41}` for a code point)"),
    ("invalid escape sequence: \\Z", "`\\Z` is not supported (write `\\z` for the end of the text)"),
    ("invalid escape sequence: \\", "back-references (`\\1`) and this escape are not supported"),
    ("invalid perl operator: (?=", "lookahead `(?=…)` is not supported"),
    ("invalid perl operator: (?!", "negative lookahead `(?!…)` is not supported"),
    ("invalid perl operator: (?<=", "lookbehind `(?<=…)` is not supported"),
    ("invalid perl operator: (?<!", "negative lookbehind `(?<!…)` is not supported"),
    ("invalid repetition size", "a repetition count over 1000 is not supported"),
    ("pattern too large", "the pattern is too large"),
)


@functools.lru_cache(maxsize=512)
def compile_pattern(pattern: str) -> re2._Regexp:
    """The compiled RE2 program, or `PatternError` saying why there is none."""
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error as err:
        raw = err.args[0] if err.args else ""
        detail = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
        reason = next((words for prefix, words in _REASONS if detail.startswith(prefix)), detail)
        raise PatternError(f"{reason} ({detail})" if reason != detail else detail,
                           unsupported=_valid_elsewhere(pattern)) from None


def _valid_elsewhere(pattern: str) -> bool:
    # Compiling with `re` only tells a valid-but-unsupported pattern from a broken one;
    # nothing is ever matched with it. (Compiling is linear in the pattern's length.)
    try:
        re.compile(pattern)
    except (re.error, OverflowError, RecursionError):
        return False
    return True


def pattern_problem(pattern: str) -> PatternError | None:
    try:
        compile_pattern(pattern)
    except PatternError as err:
        # Returned, not raised: without its traceback and the RE2 error it was raised from
        # (their frames reach the checker's, which holds this error: a reference cycle).
        err.__context__ = None
        return err.with_traceback(None)
    return None


def search(pattern: str, text: str) -> bool:
    """Whether `pattern` matches anywhere in `text` (JSON Schema's `pattern` semantics,
    and `when("/re/")`'s). Raises `PatternError` for a pattern RE2 cannot run."""
    return compile_pattern(pattern).search(text) is not None
