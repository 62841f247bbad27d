"""`mypyc_attr`, the mark that keeps a class of the front end a plain Python class when
mypyc compiles it (scripts/build_front.py, docs/architecture.md "The compiled front end").

The checker is one class made of mixins by construct (checker.py), and mypyc's native
classes cannot combine by multiple inheritance: the mixins and `Checker` carry
`@mypyc_attr(native_class=False)` (their methods are compiled all the same). mypyc
recognises the mark by its origin, so it is mypy_extensions' own where that is installed
(it is where mypy is); elsewhere (a pure wheel installed without mypy) a stand-in that
returns the class unchanged, which is all the mark does at run time anyway.
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
