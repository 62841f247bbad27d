"""The lexer: source text → tokens, with F1xxx diagnostics for bad characters,
strings, numbers and durations.

Newlines are kept as tokens (consecutive ones collapsed); the parser decides where
they end a statement and where they are insignificant. Strings are lexed into
literal pieces and `${…}` interpolation ranges; the parser lexes each range again
with the same source offsets so spans stay exact.
"""

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
OPENERS = {"(": ")", "[": "]", "{": "}"}
CLOSERS = {")": "(", "]": "[", "}": "{"}
ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "$": "$"}
BAD_CHAR_HINTS = {
    "!": ("use `not` for negation and `!=` for inequality",),
    "&": ("use `and`",),
    "'": ('strings use double quotes: "…"',),
}

# Every token of the main loop in one alternation; the group that matched names it.
# Matched with `endpos`, so a sub-lexer over a `${…}` range never reads past it.
# ASCII classes only: letters and digits outside ASCII are bad characters (F1001).
MASTER = re.compile(
    # Spaces before a token are skipped by the same match (most tokens follow one).
    r"[ \t\r\f\v\ufeff]*(?:"
    + "|".join(
        (
            r"(?P<ident>[A-Za-z_][A-Za-z0-9_]*)",
            "(?P<op>" + "|".join(re.escape(o) for o in MULTI_CHAR_OPS) + "|[" + re.escape("".join(sorted(ONE_CHAR_OPS))) + "])",
            r"(?P<newline>\n)",
            # A one-line string with no escape and no `${`, not the start of a `"""`.
            r'(?P<plain>"(?!"")(?:[^"\\\n$]|\$(?!\{))*")',
            # The tail (letters, digits or a second fraction glued on) makes a
            # duration or one bad token.
            r"(?P<number>(?P<num>[0-9]+(?P<fraction>\.[0-9]+)?(?P<exponent>[eE][+-]?[0-9]+)?)"
            r"(?P<tail>(?:[A-Za-z0-9_]|\.[0-9])*))",
            r"(?P<comment>#[^\n]*)",
            r'(?P<string>")',
            # Not a space: spaces at the end must leave no match (the loop's end).
            r"(?P<bad>[^ \t\r\f\v\ufeff])",
        )
    )
    + ")"
)
# The main loop dispatches on `lastindex` (an int compare, cheaper than the name).
_IDENT_G, _OP_G, _NEWLINE_G, _PLAIN, _NUMBER_G, _COMMENT, _STRING_G = (
    MASTER.groupindex[name] for name in ("ident", "op", "newline", "plain", "number", "comment", "string")
)
_OP, _KEYWORD, _IDENT, _NEWLINE = Kind.OP, Kind.KEYWORD, Kind.IDENT, Kind.NEWLINE
_STRING, _INT, _NUMBER, _ERROR = Kind.STRING, Kind.INT, Kind.NUMBER, Kind.ERROR


@dataclass(frozen=True)
class DocComment:
    line: int
    text: str


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
        """One `MASTER` match per token: the regex engine finds the token's extent and
        kind (the group that matched), Python only builds the token. Strings with
        escapes or `${…}` go to `_string`; bad numbers to `_bad_number`.

        The matches come from `finditer` (cheaper than a `match` call per token), started
        again after each string `_string` scanned. Its search finds what a match at the
        current position would: `bad` matches any character but a space, so nothing is
        skipped but spaces, and those only at the end."""
        pos: int | None = self.pos
        while pos is not None:
            pos = self._tokenize_from(pos)
        self.pos = self.end
        self._add(Kind.EOF, self.end)
        return self.tokens

    def _tokenize_from(self, pos: int) -> int | None:
        """Tokens from `pos` up to the next string that `_string` must scan: the offset
        after that string, or None at the end."""
        text, src, end = self.text, self.src, self.end
        tokens = self.tokens
        append = tokens.append
        brackets = self._brackets
        # Tokens are built by their constructor: the compiled front end (docs/performance.md,
        # "A compiled front end") runs `__init__` in any `__new__`, so no in-place builds.
        for m in MASTER.finditer(text, pos, end):
            group = m.lastindex or 0  # every match is one of the named alternatives
            start, pos = m.span(group)
            if group == _IDENT_G:
                word = text[start:pos]
                append(Token(_KEYWORD if word in RESERVED else _IDENT, word, src, start, pos, word))
            elif group == _OP_G:
                op = text[start:pos]
                if op in OPENERS:
                    brackets.append(op)
                elif op in CLOSERS:
                    if not brackets:
                        self._error("F1008", start, pos, f"unmatched closing bracket `{op}`")
                        continue
                    opener = CLOSERS[op]
                    if brackets[-1] == opener:
                        brackets.pop()
                    elif opener in brackets:
                        while brackets and brackets[-1] != opener:
                            brackets.pop()
                        brackets.pop()
                append(Token(_OP, op, src, start, pos))
            elif group == _NEWLINE_G:
                if tokens and tokens[-1].kind is not _NEWLINE:
                    append(Token(_NEWLINE, "\n", src, start, pos))
            elif group == _PLAIN:
                # A string without escapes or interpolations: its text is its value.
                body = text[start + 1 : pos - 1]
                tok = Token(_STRING, text[start:pos], src, start, pos, body)
                if body:
                    tok.parts = [body]
                append(tok)
            elif group == _NUMBER_G:
                if m.group("tail"):
                    self.pos = pos
                    self._bad_number(start, m.end("num"), pos)
                else:
                    literal = text[start:pos]
                    if m.group("fraction") or m.group("exponent"):
                        append(Token(_NUMBER, literal, src, start, pos, float(literal)))
                    else:
                        append(Token(_INT, literal, src, start, pos, int(literal)))
            elif group == _COMMENT:
                if text.startswith("##", start):
                    line_start = text.rfind("\n", 0, start) + 1
                    if not text[line_start:start].strip():
                        self.docs.append(DocComment(src.position(start).line, text[start + 2 : pos].strip()))
            elif group == _STRING_G:
                self.pos = start
                self._string()
                return self.pos
            else:
                ch = text[start:pos]
                self._error("F1001", start, pos, f"unexpected character `{ch}`", BAD_CHAR_HINTS.get(ch, ()))
                append(Token(_ERROR, ch, src, start, pos))
        return None

    def _bad_number(self, start: int, number_end: int, tail: int) -> None:
        """A number glued to letters, digits or a second fraction is one bad token
        (or a duration: an integer followed by `ms`, `s`, `m` or `h`)."""
        text = self.text
        literal = text[start:number_end]
        is_int = literal.isdigit()
        suffix = text[number_end:tail]
        letters = suffix if suffix.isalpha() else None
        if is_int and letters in DURATION_UNITS:
            self._add(Kind.DURATION, start, int(literal) * DURATION_UNITS[letters])
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
        if self.text.find("\\", start, end) < 0:
            return  # no backslash: nothing to check (most strings)
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
        if "\\" not in piece:  # most pieces: nothing to process
            if out and isinstance(out[-1], str):
                out[-1] += piece
            elif piece:
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
