"""Token kinds and the reserved words of Flow (language.md §1)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from flow_kernel.source import SourceFile, Span

RESERVED = frozenset(
    """use type tool agent team workflow let var if else for in while return break continue
    stage pipeline parallel async await verify require expect emit print log publish approve
    ask run try catch as true false null and or not limits external schema it""".split()
)

DURATION_UNITS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000}


class Kind(str, Enum):
    IDENT = "identifier"
    KEYWORD = "keyword"
    INT = "integer"
    NUMBER = "number"
    DURATION = "duration"
    STRING = "string"
    OP = "operator"
    NEWLINE = "newline"
    EOF = "end of input"
    ERROR = "bad token"  # already reported by the lexer; the parser stays quiet about it


# Plain module constants: enum attribute lookups are slow on the hot path.
_OP, _KEYWORD, _IDENT = Kind.OP, Kind.KEYWORD, Kind.IDENT


NO_PARTS: tuple[str | Interpolation, ...] = ()
_new_span = Span.__new__


@dataclass(frozen=True)
class Interpolation:
    """A `${…}` inside a string: the offsets of the expression text in the source."""

    start: int
    end: int


class Token:
    """One token. A slotted class: the lexer makes one per token, and dataclass
    construction with a list default costs several times more.

    Its place is two offsets; the `Span` is made when asked for (`span`). Most tokens
    (operators, newlines, keywords: ~30,000 of the bench's ~49,000) never are: the
    parser reads `start`/`end`, and only a token that becomes a node's span, or a
    diagnostic's, gets one."""

    __slots__ = ("end", "kind", "parts", "src", "start", "text", "value")

    def __init__(self, kind: Kind, text: str, src: SourceFile, start: int, end: int, value: object = None) -> None:
        self.kind = kind
        self.text = text
        self.src = src
        self.start = start
        self.end = end
        self.value = value
        # For STRING tokens: literal text pieces and interpolations, in order. Other tokens
        # share one empty tuple (a list per token cost ~5 % of lexing).
        self.parts: Sequence[str | Interpolation] = NO_PARTS

    @property
    def span(self) -> Span:
        """A new `Span` at each read (equal ones: spans compare by offsets). Built in place
        (`Span.__new__` and its three slots), cheaper than `Span(…)`'s `__init__` call."""
        span = _new_span(Span)
        span.source = self.src
        span.start = self.start
        span.end = self.end
        return span

    def __repr__(self) -> str:
        return f"Token({self.kind.name}, {self.text!r})"

    def is_op(self, *ops: str) -> bool:
        return self.kind is _OP and self.text in ops

    def is_kw(self, *words: str) -> bool:
        return self.kind is _KEYWORD and self.text in words

    def is_word(self, *words: str) -> bool:
        """A contextual keyword (`details`, `choice`, …), spelled as an identifier."""
        return self.kind is _IDENT and self.text in words

    def describe(self) -> str:
        if self.kind is Kind.EOF:
            return "end of input"
        if self.kind is Kind.NEWLINE:
            return "end of line"
        if self.kind is Kind.STRING:
            return "a string"
        if self.kind in (Kind.INT, Kind.NUMBER, Kind.DURATION):
            return f"`{self.text}`"
        return f"`{self.text}`"
