"""`mypyc_attr`, the marks that tell mypyc how to compile a class of the front end
(flow_kernel/compiled_front.py, scripts/build-front; docs/architecture.md "The compiled
front end"). Plain Python ignores them.

- `@mypyc_attr(native_class=False)`: the checker is one class made of mixins by construct
  (lang/checker.py), and mypyc's native classes cannot combine by multiple inheritance;
  the mixins and `Checker` stay plain classes (their methods are compiled all the same).
- `@mypyc_attr(serializable=True)`: what a check result holds (spans, source files, nodes,
  types, declarations) is pickled and copied like a Python object, without `__init__`
  (a Ray worker gets a compiled program pickled).

mypyc recognises the mark by its origin, so it is mypy_extensions' own where that is
installed (it is where mypy is); elsewhere (a pure wheel installed without mypy) a
stand-in that returns the class unchanged, which is all the mark does at run time anyway.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

_C = TypeVar("_C")

try:
    from mypy_extensions import mypyc_attr as mypyc_attr
except ImportError:

    def mypyc_attr(*attrs: str, **kwattrs: object) -> Callable[[_C], _C]:
        """The class or function unchanged."""
        return lambda marked: marked
