"""The lexer as it was before the master-regex rewrite (issue 23), kept verbatim as
the reference that tests/lang/test_lexer_equivalence.py compares the real lexer with:
same tokens (kind, text, span, value, string parts), doc comments and diagnostics.
Test-only code; do not import it from flow_kernel."""

from __future__ import annotations

import re
from dataclasses import dataclass

from flow_kernel.diagnostics.registry import Reporter
from flow_kernel.lang.tokens import DURATION_UNITS, RESERVED, Interpolation, Kind, Token
from flow_kernel.source import SourceFile

THREE_CHAR_OPS = ("...",)
TWO_CHAR_OPS = ("?.", "??", "=>", "==", "!=", "<=", ">=", "->")
ONE_CHAR_OPS = set("()[]{},:;.+-*/%<>=|?")
MULTI_CHAR_OPS = THREE_CHAR_OPS + TWO_CHAR_OPS
MULTI_CHAR_STARTS = {o[0] for o in MULTI_CHAR_OPS}
OPENERS = {"(": ")", "[": "]", "{": "}"}
CLOSERS = {")": "(", "]": "[", "}": "{"}
IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
SPACE_RE = re.compile(r"[ \t\r\f\v\ufeff]+")
ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "$": "$"}


@dataclass(frozen=True)
class DocComment:
    line: int
    text: str


def _is_digit(ch: str) -> bool:
    return "0" <= ch <= "9" and ch != ""


def _is_ident_start(ch: str) -> bool:
    return ch == "_" or ("a" <= ch <= "z") or ("A" <= ch <= "Z")


def _is_ident_char(ch: str) -> bool:
    return _is_ident_start(ch) or ("0" <= ch <= "9")


class Lexer:
    def __init__(
        self, source: SourceFile, reporter: Reporter, start: int = 0, end: int | None = None
    ) -> None:
        self.src = source
        self.text = source.text
        self.pos = start
        self.end = len(self.text) if end is None else end
        self.reporter = reporter
        self.tokens: list[Token] = []
        self.docs: list[DocComment] = []
        self._brackets: list[str] = []

    # -- helpers -------------------------------------------------------------
    def _peek(self, k: int = 0) -> str:
        i = self.pos + k
        return self.text[i] if i < self.end else ""

    def _error(self, code: str, start: int, end: int, message: str, hints: tuple[str, ...] = ()) -> None:
        self.reporter.report(code, self.src.span(start, max(end, start + 1) if end <= self.end else end), message, hints=hints)

    def _add(self, kind: Kind, start: int, value: object = None) -> Token:
        pos = self.pos
        tok = Token(kind, self.text[start:pos], self.src, start, pos, value)
        self.tokens.append(tok)
        return tok

    # -- main loop -----------------------------------------------------------
    def tokenize(self) -> list[Token]:
        text = self.text
        while self.pos < self.end:
            ch = text[self.pos]
            start = self.pos
            if ch == "\n":
                self.pos += 1
                if self.tokens and self.tokens[-1].kind is not Kind.NEWLINE:
                    self._add(Kind.NEWLINE, start)
                continue
            if ch in " \t\r\f\v\ufeff":
                m = SPACE_RE.match(text, self.pos, self.end)
                self.pos = m.end() if m else self.pos + 1
                continue
            if ch == "#":
                self._comment()
                continue
            if _is_ident_start(ch):
                m = IDENT_RE.match(text, self.pos, self.end)
                assert m is not None
                self.pos = m.end()
                word = m.group()
                self._add(Kind.KEYWORD if word in RESERVED else Kind.IDENT, start, word)
                continue
            if _is_digit(ch):
                self._number()
                continue
            if ch == '"':
                self._string()
                continue
            op = None
            if ch in MULTI_CHAR_STARTS:
                op = next((o for o in MULTI_CHAR_OPS if text.startswith(o, self.pos) and self.pos + len(o) <= self.end), None)
            if op is None and ch in ONE_CHAR_OPS:
                op = ch
            if op is not None:
                self.pos += len(op)
                if op in OPENERS:
                    self._brackets.append(op)
                elif op in CLOSERS:
                    if not self._brackets:
                        self._error("F1008", start, self.pos, f"unmatched closing bracket `{op}`")
                        continue
                    if self._brackets[-1] == CLOSERS[op]:
                        self._brackets.pop()
                    elif CLOSERS[op] in self._brackets:
                        while self._brackets and self._brackets[-1] != CLOSERS[op]:
                            self._brackets.pop()
                        self._brackets.pop()
                self._add(Kind.OP, start)
                continue
            self.pos += 1
            hint: tuple[str, ...] = ()
            if ch == "!":
                hint = ("use `not` for negation and `!=` for inequality",)
            elif ch == "&":
                hint = ("use `and`",)
            elif ch == "'":
                hint = ('strings use double quotes: "…"',)
            self._error("F1001", start, self.pos, f"unexpected character `{ch}`", hint)
            self._add(Kind.ERROR, start)
        self.pos = self.end
        self._add(Kind.EOF, self.end)
        return self.tokens

    def _comment(self) -> None:
        start = self.pos
        while self.pos < self.end and self.text[self.pos] != "\n":
            self.pos += 1
        body = self.text[start : self.pos]
        line_start = self.text.rfind("\n", 0, start) + 1
        if body.startswith("##") and not self.text[line_start:start].strip():
            self.docs.append(DocComment(self.src.position(start).line, body[2:].strip()))

    def _number(self) -> None:
        text, start = self.text, self.pos
        while _is_digit(self._peek()):
            self.pos += 1
        is_int = True
        if self._peek() == "." and _is_digit(self._peek(1)):
            is_int = False
            self.pos += 1
            while _is_digit(self._peek()):
                self.pos += 1
        if self._peek() in ("e", "E") and (
            _is_digit(self._peek(1)) or (self._peek(1) in "+-" and self._peek(1) != "" and _is_digit(self._peek(2)))
        ):
            is_int = False
            self.pos += 2
            while _is_digit(self._peek()):
                self.pos += 1
        # A number glued to letters, digits or a second fraction is one bad token.
        tail = self.pos
        while tail < self.end and (_is_ident_char(text[tail]) or (text[tail] == "." and tail + 1 < self.end and _is_digit(text[tail + 1]))):
            tail += 1
        suffix = text[self.pos : tail]
        if suffix:
            self.pos = tail
            letters = suffix if suffix.isalpha() else None
            if is_int and letters in DURATION_UNITS:
                value = int(text[start : tail - len(suffix)]) * DURATION_UNITS[letters]
                self._add(Kind.DURATION, start, value)
                return
            if is_int and suffix[0].isalpha():
                self._error(
                    "F1005", start, tail, f"invalid duration literal `{text[start:tail]}`",
                    ("durations are an integer followed by `ms`, `s`, `m` or `h`, e.g. `30s`",),
                )
            elif not is_int and suffix.isalpha() and suffix in DURATION_UNITS:
                self._error(
                    "F1005", start, tail, f"invalid duration literal `{text[start:tail]}`: durations take whole numbers",
                    ("write a smaller unit instead of a fraction, e.g. `1500ms` for `1.5s`",),
                )
            else:
                self._error("F1004", start, tail, f"invalid number literal `{text[start:tail]}`")
            self._add(Kind.ERROR, start)
            return
        literal = text[start : self.pos]
        if is_int:
            self._add(Kind.INT, start, int(literal))
        else:
            self._add(Kind.NUMBER, start, float(literal))

    # -- strings -------------------------------------------------------------
    def _string(self) -> None:
        start = self.pos
        triple = self.text.startswith('"""', self.pos)
        self.pos += 3 if triple else 1
        raw: list[str | Interpolation] = []  # raw literal text (escapes unprocessed) and interpolations
        piece_start = self.pos
        terminated = False
        while self.pos < self.end:
            ch = self.text[self.pos]
            if triple and self.text.startswith('"""', self.pos):
                terminated = True
                break
            if not triple and ch == '"':
                terminated = True
                break
            if not triple and ch == "\n":
                break
            if ch == "\\":
                self.pos += 2 if self.pos + 1 < self.end and self.text[self.pos + 1] != "\n" else 1
                continue
            if ch == "$" and self._peek(1) == "{":
                raw.append(self.text[piece_start : self.pos])
                interp = self._interpolation(triple)
                if interp is None:
                    self._add(Kind.ERROR, start)
                    return
                raw.append(interp)
                piece_start = self.pos
                continue
            self.pos += 1
        raw.append(self.text[piece_start : self.pos])
        if not terminated:
            if triple:
                self._error("F1007", start, start + 3, "unterminated triple-quoted string")
            else:
                self._error("F1002", start, self.pos, "unterminated string literal",
                            ('close the string with `"` on the same line, or use `"""` for text over several lines',))
            self._add(Kind.ERROR, start)
            return
        content_start = start + (3 if triple else 1)
        self._check_escapes(content_start, self.pos, [p for p in raw if isinstance(p, Interpolation)])
        self.pos += 3 if triple else 1
        if triple:
            raw = _dedent(raw)
        parts = _unescape(raw)
        tok = self._add(Kind.STRING, start)
        tok.parts = parts
        tok.value = "".join(p for p in parts if isinstance(p, str)) if all(isinstance(p, str) for p in parts) else None

    def _interpolation(self, triple: bool) -> Interpolation | None:
        """Scan `${ … }` with nested braces and strings; returns the expression range."""
        open_at = self.pos
        self.pos += 2
        expr_start = self.pos
        depth = 0
        while self.pos < self.end:
            ch = self.text[self.pos]
            if ch == "\n" and not triple:
                break
            if ch == '"':
                if not self._skip_nested_string(triple):
                    break
                continue
            if ch == "{":
                depth += 1
            elif ch == "}":
                if depth == 0:
                    interp = Interpolation(expr_start, self.pos)
                    self.pos += 1
                    return interp
                depth -= 1
            self.pos += 1
        self._error("F1003", open_at, open_at + 2, "unterminated `${` interpolation", ("close it with `}`",))
        # Resynchronise after the end of the line so the rest of the file still lexes.
        while self.pos < self.end and self.text[self.pos] != "\n":
            self.pos += 1
        return None

    def _skip_nested_string(self, triple: bool) -> bool:
        """Skip a plain string inside an interpolation; False if it runs off the line."""
        self.pos += 1
        while self.pos < self.end:
            ch = self.text[self.pos]
            if ch == "\\":
                self.pos += 2
                continue
            if ch == '"':
                self.pos += 1
                return True
            if ch == "\n":
                return False
            if ch == "$" and self._peek(1) == "{":
                if self._interpolation(triple) is None:
                    return False
                continue
            self.pos += 1
        return False

    def _check_escapes(self, start: int, end: int, interps: list[Interpolation]) -> None:
        """F1009 for each bad escape, found in the source itself so spans are exact
        (also in triple-quoted strings, whose text is dedented later)."""
        i = start
        holes = iter(interps)
        hole = next(holes, None)
        while i < end:
            if hole is not None and i >= hole.start:
                i = hole.end + 1
                hole = next(holes, None)
                continue
            if self.text[i] != "\\":
                i += 1
                continue
            nxt = self.text[i + 1] if i + 1 < end else ""
            if nxt in ESCAPES and nxt:
                i += 2
            elif nxt == "u" and _is_hex4(self.text[i + 2 : i + 6]):
                i += 6
            else:
                self._error("F1009", i, i + 1 + len(nxt[:1]), f"invalid escape sequence `\\{nxt}`",
                            ("valid escapes are \\n \\t \\\" \\\\ \\$ and \\uXXXX",))
                i += 2


def _unescape(raw: list[str | Interpolation]) -> list[str | Interpolation]:
    """Process escapes in the literal pieces (bad ones were reported by `_check_escapes`
    and stand for the escaped character)."""
    out: list[str | Interpolation] = []
    for piece in raw:
        if isinstance(piece, Interpolation):
            out.append(piece)
            continue
        buf: list[str] = []
        i = 0
        while i < len(piece):
            ch = piece[i]
            if ch != "\\":
                buf.append(ch)
                i += 1
                continue
            nxt = piece[i + 1] if i + 1 < len(piece) else ""
            if nxt in ESCAPES and nxt:
                buf.append(ESCAPES[nxt])
                i += 2
            elif nxt == "u" and _is_hex4(piece[i + 2 : i + 6]):
                buf.append(chr(int(piece[i + 2 : i + 6], 16)))
                i += 6
            else:
                buf.append(nxt)
                i += 2
        text = "".join(buf)
        if out and isinstance(out[-1], str):
            out[-1] += text
        elif text:
            out.append(text)
    return out


def _is_hex4(s: str) -> bool:
    return len(s) == 4 and all(c in "0123456789abcdefABCDEF" for c in s)


def _dedent(raw: list[str | Interpolation]) -> list[str | Interpolation]:
    """Triple-quoted dedent (language.md §1), applied to the raw text before
    interpolation; interpolations count as non-blank text."""
    # Represent interpolations by a placeholder that cannot occur in source text.
    marker = "\x00"
    joined = "".join(marker if isinstance(p, Interpolation) else p for p in raw)
    interps = [p for p in raw if isinstance(p, Interpolation)]
    lines = joined.split("\n")
    if len(lines) > 1 and lines[0].strip(" \t") == "":
        lines = lines[1:]
    if len(lines) > 1 and lines[-1].strip(" \t") == "":
        lines = lines[:-1]
    indents = [len(ln) - len(ln.lstrip(" \t")) for ln in lines if ln.strip(" \t")]
    cut = min(indents) if indents else 0
    dedented = "\n".join(ln[cut:] if ln.strip(" \t") else ln.lstrip(" \t") for ln in lines)
    out: list[str | Interpolation] = []
    pieces = dedented.split(marker)
    for i, piece in enumerate(pieces):
        out.append(piece)
        if i < len(interps):
            out.append(interps[i])
    return out


def tokenize(source: SourceFile, reporter: Reporter) -> tuple[list[Token], list[DocComment]]:
    lexer = Lexer(source, reporter)
    tokens = lexer.tokenize()
    return tokens, lexer.docs
