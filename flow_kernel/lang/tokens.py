"""Token kinds and the reserved words of Flow (language.md §1)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from flow_kernel.native_marks import rebuilt_by_fields
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


@dataclass(frozen=True)
class Interpolation:
    """A `${…}` inside a string: the offsets of the expression text in the source."""

    start: int
    end: int

    def __reduce__(self) -> tuple[Any, ...]:
        return rebuilt_by_fields(self)


class Token(Span):
    """One token, and its own span: a `Span` (its `source`, `start`, `end`) with the
    token's kind, text, value and string parts. A slotted class: the lexer makes one per
    token, and dataclass construction with a list default costs several times more.

    `span` is the token itself: a node or a diagnostic whose span is one token's (~22,000
    of the bench's ~38,000 spans) keeps the token rather than a new `Span` with the same
    three fields. As a span it is equal to (and hashes as) any span with its offsets, and
    its `text` is the source's text between them, as `Span.text` is (the lexer slices it
    so)."""

    __slots__ = ("kind", "parts", "text", "value")
    text: str  # a slot over `Span.text`: the same string, sliced once by the lexer

    def __init__(self, kind: Kind, text: str, src: SourceFile, start: int, end: int, value: object = None) -> None:
        self.kind = kind
        self.text = text
        self.source = src
        self.start = start
        self.end = end
        self.value = value
        # For STRING tokens: literal text pieces and interpolations, in order. Other tokens
        # share one empty tuple (a list per token cost ~5 % of lexing).
        self.parts: Sequence[str | Interpolation] = NO_PARTS

    def __reduce__(self) -> tuple[Any, ...]:
        return Token, (self.kind, self.text, self.source, self.start, self.end, self.value), self.parts

    def __setstate__(self, parts: Sequence[str | Interpolation]) -> None:
        self.parts = parts

    @property
    def src(self) -> SourceFile:
        return self.source

    @property
    def span(self) -> Span:
        """The token itself (see the class)."""
        return self

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
