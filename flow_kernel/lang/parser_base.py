"""Token navigation, newline modes and error recovery shared by the parser modules."""

from __future__ import annotations

from flow_kernel.diagnostics.model import Related
from flow_kernel.diagnostics.registry import Reporter
from flow_kernel.lang.tokens import Kind, Token
from flow_kernel.source import SourceFile, Span

MAX_NESTING = 120  # deeper nesting is reported, so recursion stays bounded
_NEWLINE = Kind.NEWLINE  # enum attribute lookups are slow on the hot path
_EOF = Kind.EOF


class ParseError(Exception):
    """Raised after a syntax diagnostic was reported; caught at a recovery point."""


class _Bracket:
    """The context manager of `ParserBase.bracket`, a plain class like `_NewlineMode`
    (entered ~7,700 times per 5,000 lines; a generator-based one cost several times more).
    It also sets the newline mode inside the bracket: one object and two calls a bracket."""

    __slots__ = ("ignored", "opener", "parser")

    def __init__(self, parser: ParserBase, opener: Token, ignored: bool) -> None:
        self.parser = parser
        self.opener = opener
        self.ignored = ignored

    def __enter__(self) -> None:
        parser = self.parser
        parser._open_brackets.append(self.opener)
        parser._modes.append(self.ignored)
        parser.skip_newlines_now = self.ignored

    def __exit__(self, *exc: object) -> None:
        parser = self.parser
        modes = parser._modes
        modes.pop()
        parser.skip_newlines_now = modes[-1]
        parser._open_brackets.pop()


class _NewlineMode:
    """The context manager of `ParserBase.newlines`: a plain class, because the parser
    enters one per bracket and a generator-based context manager costs several times more."""

    __slots__ = ("ignored", "parser")

    def __init__(self, parser: ParserBase, ignored: bool) -> None:
        self.parser = parser
        self.ignored = ignored

    def __enter__(self) -> None:
        parser = self.parser
        parser._modes.append(self.ignored)
        parser.skip_newlines_now = self.ignored

    def __exit__(self, *exc: object) -> None:
        modes = self.parser._modes
        modes.pop()
        self.parser.skip_newlines_now = modes[-1]


class ParserBase:
    def __init__(self, source: SourceFile, tokens: list[Token], reporter: Reporter) -> None:
        self.src = source
        self.toks = tokens
        self.i = 0
        self.reporter = reporter
        # True on top: newlines are insignificant (inside brackets and object literals).
        self._modes: list[bool] = [False]
        self.skip_newlines_now = False  # `_modes[-1]`, read on every `peek`
        self._async_depth = 0
        self.in_interpolation = False
        self.last_error_token: Token | None = None  # the token the last F1006 was about
        self._paren_start: dict[int, int] = {}  # a sub-parser for one `${…}`
        self._open_brackets: list[Token] = []

    # -- newline modes ---------------------------------------------------------
    def newlines(self, ignored: bool) -> _NewlineMode:
        """`with self.newlines(True): …` parses its body with newlines ignored (or not)."""
        return _NewlineMode(self, ignored)

    # -- navigation --------------------------------------------------------------
    # The lexer never makes two NEWLINE tokens in a row, and the last token is EOF: where
    # newlines are ignored, the token after a NEWLINE is the next significant one.
    def _index(self) -> int:
        j = self.i
        if self.skip_newlines_now and self.toks[j].kind is _NEWLINE:
            j += 1
        return j

    def peek(self) -> Token:
        # The parser peeks ~35 times a line: nothing called from here.
        tok = self.toks[self.i]
        if tok.kind is _NEWLINE and self.skip_newlines_now:
            return self.toks[self.i + 1]
        return tok

    def peek_at(self, k: int) -> Token:
        """The k-th significant token ahead (0 is `peek()`), never past EOF."""
        toks = self.toks
        j = self._index()
        if k == 1:  # almost every call
            if toks[j].kind is _EOF:
                return toks[j]
            j += 1
            if self.skip_newlines_now and toks[j].kind is _NEWLINE:
                j += 1
            return toks[j]
        for _ in range(k):
            if toks[j].kind is _EOF:
                break
            j += 1
            if self.skip_newlines_now and toks[j].kind is _NEWLINE:
                j += 1
        return toks[j]

    def advance(self) -> Token:
        toks, j = self.toks, self.i
        tok = toks[j]
        if tok.kind is _NEWLINE and self.skip_newlines_now:
            j += 1
            tok = toks[j]
        if tok.kind is not _EOF:
            j += 1
        self.i = j
        return tok

    def prev_end(self) -> int:
        """End offset of the last consumed significant token."""
        j = self.i - 1
        while j > 0 and self.toks[j].kind is _NEWLINE:
            j -= 1
        return self.toks[j].end if j >= 0 else 0

    def span_from(self, start: Span | int) -> Span:
        """From `start` to the end of the last consumed significant token (`prev_end`,
        inlined: ~3 spans a line)."""
        begin = start if isinstance(start, int) else start.start
        j = self.i - 1
        if j < 0:
            return Span(self.src, begin, begin if begin > 0 else 0)
        toks = self.toks
        while j > 0 and toks[j].kind is _NEWLINE:
            j -= 1
        end = toks[j].end
        return Span(self.src, begin, end if end > begin else begin)

    def skip_newlines(self) -> None:
        while self.toks[self.i].kind is Kind.NEWLINE:
            self.i += 1

    # A token's text alone tells an operator or a reserved word: an identifier is never
    # spelt like one, a string's text has its quotes, a number starts with a digit, a bad
    # character is never an operator's. So `peek().text == "("` is `peek().is_op("(")`.
    def at_op(self, *ops: str) -> bool:
        return self.peek().text in ops

    def at_kw(self, *words: str) -> bool:
        return self.peek().text in words

    def accept_op(self, op: str) -> Token | None:
        if self.peek().text == op:
            return self.advance()
        return None

    def accept_kw(self, word: str) -> Token | None:
        if self.peek().text == word:
            return self.advance()
        return None

    # -- errors ----------------------------------------------------------------
    def fail(self, expected: str, tok: Token | None = None, hints: tuple[str, ...] = ()) -> ParseError:
        """Report "expected X, found Y" at `tok` (F1007 at the end of input)."""
        tok = tok or self.peek()
        if tok.kind is Kind.ERROR:
            return ParseError()  # the lexer already said what is wrong with it
        if tok.kind is Kind.EOF and self.in_interpolation:
            self.reporter.report("F1006", tok.span, f"expected {expected} before the end of the interpolation", hints=hints)
            return ParseError()
        if tok.kind is Kind.EOF:
            related: list[Related] = []
            if self._open_brackets:
                opener = self._open_brackets[-1]
                related.append(Related(opener.span, f"`{opener.text}` opened here is never closed"))
            self.reporter.report(
                "F1007", tok.span, f"unexpected end of input: expected {expected}", related, hints
            )
            return ParseError()
        if tok.is_op(")", "]", "}") and not self._open_brackets:
            if tok is not self.last_error_token:  # not twice for one stray bracket
                self.reporter.report("F1008", tok.span, f"unmatched closing bracket `{tok.text}`")
            self.last_error_token = tok
            return ParseError()
        self.last_error_token = tok
        span = tok.span
        if tok.kind is Kind.NEWLINE:
            span = self.src.span(tok.start, tok.start)
        self.reporter.report("F1006", span, f"expected {expected}, found {tok.describe()}", hints=hints)
        return ParseError()

    def expect_op(self, op: str, what: str | None = None) -> Token:
        if self.peek().text == op:
            return self.advance()
        raise self.fail(what or f"`{op}`")

    def bracket(self, opener: Token, newlines_ignored: bool) -> _Bracket:
        """`with self.bracket(opener, newlines_ignored=True):` — inside an open bracket (for
        its diagnostics and the nesting bound, checked here: every use enters it at once),
        with newlines ignored or not (as `newlines`)."""
        if len(self._open_brackets) >= MAX_NESTING:
            self.reporter.report("F1006", opener.span, f"brackets and blocks are nested more than {MAX_NESTING} deep here")
            raise ParseError()
        return _Bracket(self, opener, newlines_ignored)

    def synchronize(self, start: int | None = None, consume_end: bool = True) -> None:
        """Skip to the end of the current statement: a newline or `;` outside brackets,
        or just before a `}` that closes the enclosing block. Brackets the statement
        opened (from token `start`) before the error must be closed first, so that the
        `}` of a broken object literal or agent body does not end the enclosing block."""
        # Only braces count: an unclosed `(` or `[` is more often the mistake itself
        # (`let a = (1 +` then a new statement), and skipping to its closer would
        # swallow the statements after it.
        depth = 0
        for tok in self.toks[start if start is not None else self.i : self.i]:
            if tok.kind is Kind.OP and tok.text == "{":
                depth += 1
            elif tok.kind is Kind.OP and tok.text == "}":
                depth = max(0, depth - 1)
        while True:
            tok = self.toks[self.i]
            if tok.kind is Kind.EOF:
                return
            if tok.kind is Kind.OP and tok.text in ("(", "[", "{"):
                depth += 1
            elif tok.kind is Kind.OP and tok.text in (")", "]", "}"):
                if depth == 0:
                    if tok.text == "}":
                        return
                    self.i += 1  # a stray closer of a broken statement
                    continue
                depth -= 1
                if depth == 0 and tok.text == "}":
                    # A closed block ends a statement such as `if … { … }`.
                    nxt = self.toks[self.i + 1]
                    if nxt.kind in (Kind.NEWLINE, Kind.EOF) or nxt.is_op(";", "}"):
                        self.i += 1
                        return
            elif depth == 0 and (tok.kind is Kind.NEWLINE or tok.is_op(";")):
                if consume_end:
                    self.i += 1
                return
            self.i += 1
