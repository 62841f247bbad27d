"""Text made safe for a terminal: the one place that decides it.

Model replies, tool results, `print` output, error messages and file names reach `flow
run`'s and `flow check`'s terminal. A control character in them is an instruction to the
terminal, not text: `ESC ] 0 ; … BEL` sets the window title, `ESC [ 2 J` clears the
screen, cursor moves rewrite what was shown, the 8-bit `CSI` (U+009B) does the same in
one character, and bidi overrides (Trojan Source) reorder what a line seems to say. So
every terminal path shows them visibly instead:

- newline and tab are kept (they are layout);
- other C0 controls and DEL become their Control Pictures: ESC → ␛, BEL → ␇, CR → ␍,
  NUL → ␀, DEL → ␡;
- C1 controls (U+0080–U+009F) and the bidi embeddings, overrides and isolates
  (U+202A–U+202E, U+2066–U+2069) have no picture and become `\\x9b` / `\\u202e`.

Pure (no I/O): the diagnostics renderer uses it as well as the CLI and the runtime.
"""

from __future__ import annotations

import re

BIDI_CONTROLS = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
# Everything `terminal_safe` replaces: C0 but \t and \n, DEL, C1, the bidi controls.
UNSAFE = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{BIDI_CONTROLS}]")
# What `json_for_terminal` must still escape: json.dumps escapes C0 itself.
_UNSAFE_IN_JSON = re.compile(f"[\x7f-\x9f{BIDI_CONTROLS}]")


def visible_char(ch: str) -> str:
    """How one character is shown on a terminal: itself, or a visible stand-in."""
    code = ord(ch)
    if ch in "\t\n":
        return ch
    if code < 0x20:
        return chr(0x2400 + code)  # ␀ … ␟
    if code == 0x7F:
        return "\u2421"  # ␡
    if 0x80 <= code <= 0x9F:
        return f"\\x{code:02x}"
    if ch in BIDI_CONTROLS:
        return f"\\u{code:04x}"
    return ch


def terminal_safe(text: str) -> str:
    """`text` with every character that would act on a terminal shown visibly."""
    return UNSAFE.sub(lambda m: visible_char(m.group()), text)


def json_for_terminal(text: str) -> str:
    """JSON text (from `json.dumps(..., ensure_ascii=False)`) with DEL, C1 and bidi controls
    written as `\\uXXXX` escapes: the same value for a JSON reader, inert on a terminal.
    They can only occur inside JSON strings, where the escape means the same character."""
    return _UNSAFE_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


__all__ = ["BIDI_CONTROLS", "json_for_terminal", "terminal_safe", "visible_char"]
