"""`mypyc_attr`, the marks that tell mypyc how to compile a class of the front end
(flow_kernel/compiled_front.py, scripts/build-front; docs/architecture.md "The compiled
front end"). Plain Python ignores them.

- `@mypyc_attr(native_class=False)`: the checker is one class made of mixins by construct
  (lang/checker.py), and mypyc's native classes cannot combine by multiple inheritance;
  the mixins and `Checker` stay plain classes (their methods are compiled all the same).

A compiled class's `__new__` runs its `__init__` (mypyc keeps every attribute defined),
so pickle and copy, which make an object with `__new__` alone and then set its
attributes, fail on it. What a check result holds (source files, spans and tokens, nodes,
types, declarations: a Ray worker gets a compiled program pickled) says how it is built
again by its constructor (`__reduce__`): `rebuilt_by_fields` for a dataclass.

mypyc recognises the mark by its origin, so it is mypy_extensions' own where that is
installed (it is where mypy is); elsewhere (a pure wheel installed without mypy) a
stand-in that returns the class unchanged, which is all the mark does at run time anyway.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

_C = TypeVar("_C")

try:
    from mypy_extensions import mypyc_attr as mypyc_attr
except ImportError:

    def mypyc_attr(*attrs: str, **kwattrs: object) -> Callable[[_C], _C]:
        """The class or function unchanged."""
        return lambda marked: marked


def rebuilt_by_fields(obj: Any) -> tuple[Any, ...]:
    """`__reduce__` of a dataclass whose fields are all its constructor's arguments: its
    class, called with the fields' values (keyword-only ones by name)."""
    args: list[Any] = []
    keywords: dict[str, Any] = {}
    for f in dataclasses.fields(obj):
        if f.kw_only:
            keywords[f.name] = getattr(obj, f.name)
        else:
            args.append(getattr(obj, f.name))
    return construct, (type(obj), tuple(args), keywords)


def construct(cls: Callable[..., Any], args: tuple[Any, ...], keywords: dict[str, Any]) -> Any:
    """`cls(*args, **keywords)`: how `rebuilt_by_fields` builds an object again."""
    return cls(*args, **keywords)
