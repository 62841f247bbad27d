"""Static types of Flow (language.md §3.2): structural, with `any`, literals and unions.

Types are immutable values. Aliases stay visible as `Named` so messages and JSON
Schemas can say `Triage` instead of spelling the object out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from flow_kernel.native_marks import rebuilt_by_fields

Constraint = tuple[str, object]


class Type:
    def __str__(self) -> str:
        return display(self)

    def __reduce__(self) -> tuple[Any, ...]:
        return rebuilt_by_fields(self)


@dataclass(frozen=True)
class AnyType(Type):
    raw_schema: tuple[tuple[str, object], ...] | None = None  # for `schema { … }`
    external: bool = False

    def __str__(self) -> str:
        return display(self)


@dataclass(frozen=True)
class Prim(Type):
    name: str  # string number int bool null duration
    constraints: tuple[Constraint, ...] = ()

    def __str__(self) -> str:
        return display(self)


@dataclass(frozen=True)
class Literal(Type):
    value: str | int | float | bool

    def __str__(self) -> str:
        return display(self)


@dataclass(frozen=True)
class ArrayType(Type):
    item: Type
    constraints: tuple[Constraint, ...] = ()

    def __str__(self) -> str:
        return display(self)


@dataclass(frozen=True)
class Field:
    type: Type
    optional: bool = False

    def __reduce__(self) -> tuple[Any, ...]:
        return rebuilt_by_fields(self)


@dataclass(frozen=True)
class ObjectType(Type):
    fields: tuple[tuple[str, Field], ...]
    open: bool = False

    def get(self, name: str) -> Field | None:
        for key, fld in self.fields:
            if key == name:
                return fld
        return None

    @property
    def names(self) -> list[str]:
        return [k for k, _ in self.fields]

    def __str__(self) -> str:
        return display(self)


@dataclass(frozen=True)
class UnionType(Type):
    options: tuple[Type, ...]

    def __str__(self) -> str:
        return display(self)


@dataclass(frozen=True, eq=False)
class Named(Type):
    """A reference to a type alias; `target` is filled in once the alias resolves."""

    name: str
    target: list[Type] = field(default_factory=list, compare=False)

    @property
    def resolved(self) -> Type:
        return self.target[0] if self.target else ANY

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Named) and other.name == self.name and other.resolved == self.resolved

    def __hash__(self) -> int:
        return hash(("named", self.name))

    def __str__(self) -> str:
        return self.name


ANY = AnyType()
STRING = Prim("string")
NUMBER = Prim("number")
INT = Prim("int")
BOOL = Prim("bool")
NULL = Prim("null")
DURATION = Prim("duration")
PRIMS = {"string": STRING, "number": NUMBER, "int": INT, "bool": BOOL, "null": NULL, "duration": DURATION}


# The type classes are final (no subclass: tests/lang/test_types_final.py), so the hot
# helpers from here to `related` test `type(t) is C` rather than `isinstance(t, C)`: a
# specialized call and an identity test, where an `isinstance` that fails (most of them)
# goes through `type.__instancecheck__` and an MRO walk (~300 instructions).
_SCALAR_CLASSES = (Prim, Literal)


# `unwrap` is called ~75,000 times in a 5,000-line check, almost always on a type that is
# not an alias: the hot helpers below test `type(t) is Named` before calling it.
def unwrap(t: Type) -> Type:
    if type(t) is not Named:  # most calls: one test, not the loop's two
        return t
    seen = 0
    while type(t) is Named and seen < 64:
        t = t.resolved
        seen += 1
    return ANY if type(t) is Named else t


def literal_base(t: Literal) -> Prim:
    v = t.value
    if isinstance(v, bool):
        return BOOL
    if isinstance(v, int):
        return INT
    if isinstance(v, float):
        return NUMBER
    return STRING


def widen(t: Type) -> Type:
    """Literal types widen to their base (used for `var` and array element inference)."""
    t0 = unwrap(t)
    if type(t0) is Literal:
        return literal_base(t0)
    if type(t0) is UnionType:
        return union([widen(o) for o in t0.options])
    return t


def strip_constraints(t: Type) -> Type:
    if type(t) is Prim and t.constraints:
        return PRIMS[t.name]
    if type(t) is ArrayType and t.constraints:
        return ArrayType(t.item)
    return t


def union(types: list[Type]) -> Type:
    """Flatten and deduplicate; `any` absorbs everything."""
    if len(types) == 1:  # one type that is no union (most calls: a field's or an array's item type)
        only = types[0]
        core = unwrap(only) if type(only) is Named else only
        if type(core) is not UnionType and type(core) is not AnyType:
            return only
    flat: list[Type] = []
    seen: set[Type] = set()
    for t in types:
        u = unwrap(t) if type(t) is Named else t
        members = u.options if type(u) is UnionType else (t,)
        for m in members:
            if type(m) is AnyType or (type(m) is Named and type(unwrap(m)) is AnyType):
                return ANY
            if m not in seen:
                seen.add(m)
                flat.append(m)
    if not flat:
        return NULL
    if len(flat) == 1:
        return flat[0]
    return UnionType(tuple(flat))


def options(t: Type) -> tuple[Type, ...]:
    u = unwrap(t) if type(t) is Named else t
    return u.options if type(u) is UnionType else (t,)


def is_any(t: Type) -> bool:
    return type(t) is AnyType or (type(t) is Named and type(unwrap(t)) is AnyType)


def may_be_null(t: Type) -> bool:
    return any(_is_null(o) for o in options(t)) and not is_any(t)


def _is_null(t: Type) -> bool:
    u = unwrap(t) if type(t) is Named else t
    return type(u) is Prim and u.name == "null"


def without_null(t: Type) -> Type:
    if is_any(t):
        return t
    rest = [o for o in options(t) if not _is_null(o)]
    return union(rest) if rest else NULL


def prim_name(t: Type) -> str | None:
    """`string`, `number`, `int`, `bool`, `null`, `duration` for scalars (literals by base)."""
    u = unwrap(t) if type(t) is Named else t
    if type(u) is Literal:
        return literal_base(u).name
    if type(u) is Prim:
        return u.name
    return None


# The four tests below answer a scalar (most calls) without the general walk over options.
def is_numeric(t: Type) -> bool:
    if type(t) in _SCALAR_CLASSES:
        return prim_name(t) in ("number", "int", "duration")
    return is_any(t) or all(prim_name(o) in ("number", "int", "duration") for o in options(t))


def is_intlike(t: Type) -> bool:
    if type(t) in _SCALAR_CLASSES:
        return prim_name(t) in ("int", "duration")
    return all(prim_name(o) in ("int", "duration") for o in options(t)) and not is_any(t)


def is_stringy(t: Type) -> bool:
    if type(t) in _SCALAR_CLASSES:
        return prim_name(t) == "string"
    return is_any(t) or all(prim_name(o) == "string" for o in options(t))


def is_bool(t: Type) -> bool:
    if type(t) in _SCALAR_CLASSES:
        return prim_name(t) == "bool"
    return is_any(t) or all(prim_name(o) == "bool" for o in options(t))


def array_item(t: Type) -> Type | None:
    """The item type when `t` is (a union of) arrays; None when it is not an array."""
    if is_any(t):
        return ANY
    items: list[Type] = []
    for o in options(t):
        u = unwrap(o)
        if type(u) is not ArrayType:
            return None
        items.append(u.item)
    return union(items)


def as_object(t: Type) -> ObjectType | None:
    u = unwrap(t)
    return u if type(u) is ObjectType else None


# --- assignability ---------------------------------------------------------------


def assignable(src: Type, dst: Type, depth: int = 0) -> bool:
    """Can a value of static type `src` be used where `dst` is expected?"""
    if depth > 40 or src is dst:  # a type is assignable to itself (2 of 3 calls in the bench)
        return True
    s = unwrap(src) if type(src) is Named else src
    d = unwrap(dst) if type(dst) is Named else dst
    if type(s) is AnyType or type(d) is AnyType:
        return True
    if type(s) is UnionType:
        return all(assignable(o, dst, depth + 1) for o in s.options)
    if type(d) is UnionType:
        return any(assignable(src, o, depth + 1) for o in d.options)
    if type(d) is Literal:
        return type(s) is Literal and s.value == d.value and type(s.value) is type(d.value)
    if type(s) is Literal:
        return assignable(literal_base(s), d, depth + 1)
    if type(s) is Prim and type(d) is Prim:
        if s.name == d.name:
            return True
        return (s.name, d.name) in {("int", "number"), ("duration", "int"), ("duration", "number")}
    if type(s) is ArrayType and type(d) is ArrayType:
        return assignable(s.item, d.item, depth + 1)
    if type(s) is ObjectType and type(d) is ObjectType:
        for name, dfield in d.fields:
            sfield = s.get(name)
            if sfield is None:
                if not dfield.optional and not s.open:
                    return False
                continue
            if sfield.optional and not dfield.optional:
                return False
            if not assignable(sfield.type, dfield.type, depth + 1):
                return False
        if not d.open:
            for name, _ in s.fields:
                if d.get(name) is None:
                    return False
        return True
    return False


def related(a: Type, b: Type) -> bool:
    """Could a value have both types (for `==` between unrelated types, F3015)?"""
    if is_any(a) or is_any(b):
        return True
    for x in options(a):
        for y in options(b):
            wx, wy = widen(x), widen(y)
            if assignable(wx, wy) or assignable(wy, wx):
                return True
    return False


# --- display ---------------------------------------------------------------------


def display(t: Type, depth: int = 0) -> str:
    if depth > 6:
        return "…"
    if isinstance(t, Named):
        return t.name
    if isinstance(t, AnyType):
        return "external" if t.external else "any"
    if isinstance(t, Prim):
        if t.constraints:
            inner = ", ".join(f"{k}: {_lit(v)}" for k, v in t.constraints)
            return f"{t.name}({inner})"
        return t.name
    if isinstance(t, Literal):
        return _lit(t.value)
    if isinstance(t, ArrayType):
        item = display(t.item, depth + 1)
        if isinstance(t.item, UnionType):
            item = f"({item})"
        return item + "[]"
    if isinstance(t, ObjectType):
        parts = [f"{k}{'?' if f.optional else ''}: {display(f.type, depth + 1)}" for k, f in t.fields]
        if t.open:
            parts.append("...")
        return "{" + ", ".join(parts) + "}"
    if isinstance(t, UnionType):
        opts = [o for o in t.options if not _is_null(o)]
        if len(opts) == 1 and len(t.options) == 2:
            inner = display(opts[0], depth + 1)
            return f"({inner})?" if isinstance(unwrap(opts[0]), UnionType) else inner + "?"
        return " | ".join(display(o, depth + 1) for o in t.options)
    return "?"


def _lit(v: object) -> str:
    return json.dumps(v, ensure_ascii=False)


def object_type(fields: dict[str, Type], optional: frozenset[str] = frozenset(), open: bool = False) -> ObjectType:
    return ObjectType(tuple((k, Field(v, k in optional)) for k, v in fields.items()), open)


ERROR_OBJECT = object_type({"code": STRING, "message": STRING, "stage": union([STRING, NULL]), "details": ANY})
RUN_RESULT = object_type({"stdout": STRING, "stderr": STRING, "exit_code": INT})
