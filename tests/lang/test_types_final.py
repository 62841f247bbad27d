"""The static type classes are final: `types.py`'s hot helpers test `type(t) is C` rather
than `isinstance(t, C)` (much cheaper when it fails), which is the same test only while no
class derives from them. A subclass would be silently taken for "not a C" there."""

from __future__ import annotations

import importlib
import pkgutil

import flow_kernel.lang
from flow_kernel.lang import types as T


def test_no_class_derives_from_a_type_class() -> None:
    for info in pkgutil.iter_modules(flow_kernel.lang.__path__, "flow_kernel.lang."):
        importlib.import_module(info.name)  # every module that could define one
    for cls in (T.AnyType, T.Prim, T.Literal, T.ArrayType, T.ObjectType, T.UnionType, T.Named):
        assert cls.__subclasses__() == [], f"{cls.__name__} is subclassed: types.py tests `type(t) is {cls.__name__}`"
