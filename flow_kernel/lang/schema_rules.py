"""What a raw `schema { … }` may hold beyond being valid JSON Schema.

A schema is one self-contained document. The host validates with a `referencing` registry
that retrieves nothing, and the checker refuses here, with a path into the schema, what
would make resolution leave the document:

- a `$ref`/`$dynamicRef` that is not a local fragment: `#`, a JSON pointer `#/…` to a
  schema that exists in this document, or `#name` naming an `$anchor`/`$dynamicAnchor`
  of this document (anything else, `http://…`, `file://…`, `other.json`, is a fetch);
- an `$id` anywhere: it changes the base URI, so that `#/…` no longer means this
  document (and an embedded `$id` can point the base at any address);
- a `$schema` other than draft 2020-12's, or below the root (Flow validates with 2020-12;
  another dialect's meta-schema is something to look up).

Every `pattern` and `patternProperties` key must run on RE2 (`patterns.py`).

The walk is deliberately blunt: a `$ref` key with a string value is checked wherever it
is, even inside `const` or `examples`, where it would only be data."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from flow_kernel.lang.patterns import PatternError, pattern_problem

DIALECTS = ("https://json-schema.org/draft/2020-12/schema", "https://json-schema.org/draft/2020-12/schema#")
_ANCHOR = re.compile(r"^[A-Za-z_][-A-Za-z0-9._]*$")


@dataclass(frozen=True)
class SchemaProblem:
    path: str  # JSON pointer into the schema, "" for the root
    message: str
    pattern: PatternError | None = None  # set for a pattern RE2 cannot run


def _nodes(schema: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    stack: list[tuple[str, Any]] = [("", schema)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, dict):
            yield path, value
            stack.extend((f"{path}/{_escape(str(k))}", v) for k, v in reversed(value.items()))
        elif isinstance(value, list):
            stack.extend((f"{path}/{i}", v) for i, v in reversed(list(enumerate(value))))


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def resolve_pointer(document: Any, pointer: str) -> tuple[bool, Any]:
    """(found, value) for an RFC 6901 pointer (already taken out of its URI fragment)."""
    if pointer == "":
        return True, document
    if not pointer.startswith("/"):
        return False, None
    node = document
    for raw in pointer[1:].split("/"):
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node) and (part == "0" or not part.startswith("0")):
            node = node[int(part)]
        else:
            return False, None
    return True, node


def schema_problems(schema: dict[str, Any]) -> list[SchemaProblem]:
    """Everything that keeps `schema` (already valid JSON Schema) from being validated
    without leaving the document or without a backtracking regex engine, in document order."""
    anchors = {node[key] for _, node in _nodes(schema) for key in ("$anchor", "$dynamicAnchor")
               if isinstance(node.get(key), str)}
    problems: list[SchemaProblem] = []
    for path, node in _nodes(schema):
        if isinstance(node.get("$id"), str):
            problems.append(SchemaProblem(f"{path}/$id", "`$id` is not allowed: a Flow schema is one document, and an "
                                                         "`$id` changes what its references point to (remove it)"))
        dialect = node.get("$schema")
        if isinstance(dialect, str) and (path or dialect not in DIALECTS):
            problems.append(SchemaProblem(f"{path}/$schema", f"`$schema` must be \"{DIALECTS[0]}\" (draft 2020-12), "
                                                             "at the root only" + (f", not {dialect!r}" if not path else "")))
        for key in ("$anchor", "$dynamicAnchor"):
            if isinstance(node.get(key), str) and not _ANCHOR.match(node[key]):
                problems.append(SchemaProblem(f"{path}/{key}", f"`{key}` must be a plain name such as \"item\""))
        for key in ("$ref", "$dynamicRef"):
            target = node.get(key)
            if isinstance(target, str):
                reason = _reference_problem(schema, target, anchors)
                if reason:
                    problems.append(SchemaProblem(f"{path}/{_escape(key)}", f"`{key}` {target!r} {reason}"))
        if isinstance(node.get("pattern"), str):
            problems.extend(_pattern(f"{path}/pattern", node["pattern"]))
        if isinstance(node.get("patternProperties"), dict):
            for key in node["patternProperties"]:
                problems.extend(_pattern(f"{path}/patternProperties/{_escape(str(key))}", str(key)))
    if not problems:
        loop = _reference_loop(schema, anchors)
        if loop is not None:
            problems.append(SchemaProblem(loop, "this reference leads back to where it is without going into the "
                                                "value: validating would never end"))
    return problems


# Keywords that apply a subschema to the same value (not to a part of it): a cycle through
# only these and references is endless recursion when a value is validated.
_SAME_VALUE_LISTS = ("allOf", "anyOf", "oneOf")
_SAME_VALUE_ONE = ("not", "if", "then", "else")


def _reference_loop(schema: dict[str, Any], anchors: set[str]) -> str | None:
    """The path of a `$ref`/`$dynamicRef` on a cycle of same-value steps, or None."""
    nodes = dict(_nodes(schema))
    anchored = {node[key]: path for path, node in nodes.items() for key in ("$anchor", "$dynamicAnchor")
                if isinstance(node.get(key), str)}
    edges: dict[str, list[tuple[str, str]]] = {}  # path -> [(the keyword's path, the next schema's path)]
    for path, node in nodes.items():
        out: list[tuple[str, str]] = []
        for key in ("$ref", "$dynamicRef"):
            target = node.get(key)
            if isinstance(target, str) and target.startswith("#"):
                fragment = unquote(target[1:])
                goal = fragment if fragment == "" or fragment.startswith("/") else anchored.get(fragment)
                if goal is not None:
                    out.append((f"{path}/{key}", goal))
        for key in _SAME_VALUE_LISTS:
            if isinstance(node.get(key), list):
                out.extend((f"{path}/{key}", f"{path}/{key}/{i}") for i in range(len(node[key])))
        for key in _SAME_VALUE_ONE:
            if isinstance(node.get(key), dict):
                out.append((f"{path}/{key}", f"{path}/{key}"))
        if isinstance(node.get("dependentSchemas"), dict):
            out.extend((f"{path}/dependentSchemas", f"{path}/dependentSchemas/{_escape(str(k))}")
                       for k in node["dependentSchemas"])
        edges[path] = out
    state: dict[str, int] = {}  # 1: on the current walk, 2: done
    for start in nodes:
        if start in state:
            continue
        stack: list[tuple[str, int]] = [(start, 0)]
        state[start] = 1
        while stack:
            path, i = stack[-1]
            if i == len(edges.get(path, [])):
                state[path] = 2
                stack.pop()
                continue
            stack[-1] = (path, i + 1)
            goal = edges[path][i][1]
            if goal not in nodes:
                continue
            if state.get(goal) == 1:  # back on the walk: the edges taken since `goal` are a cycle
                on_cycle = stack[[p for p, _ in stack].index(goal):]
                taken = [edges[p][j - 1][0] for p, j in on_cycle]
                # (a cycle needs a reference: every other step goes deeper into the document)
                return next(k for k in taken if k.rsplit("/", 1)[-1] in ("$ref", "$dynamicRef"))
            if goal not in state:
                state[goal] = 1
                stack.append((goal, 0))
    return None


def _reference_problem(schema: dict[str, Any], target: str, anchors: set[str]) -> str | None:
    if not target.startswith("#"):
        return ("points outside the schema: only local references (`#`, `#/$defs/name`) are followed, "
                "nothing is fetched")
    fragment = unquote(target[1:])
    if fragment == "" or fragment.startswith("/"):
        found, value = resolve_pointer(schema, fragment)
        if not found:
            return "points to nothing in this schema"
        if not isinstance(value, dict | bool):
            return "points to a value that is not a schema"
        return None
    if fragment not in anchors:
        return "names no `$anchor` of this schema"
    return None


def _pattern(path: str, pattern: str) -> list[SchemaProblem]:
    err = pattern_problem(pattern)
    if err is None:
        return []
    return [SchemaProblem(path, f"the pattern {pattern!r} cannot be used: {err.reason}", err)]


def has_references(schema: Any) -> bool:
    return any(isinstance(node.get(k), str) for _, node in _nodes(schema) for k in ("$ref", "$dynamicRef"))


def rebase_references(schema: Any, base: str) -> Any:
    """`schema` with every local pointer reference (`#`, `#/…`) moved under `base` (a
    pointer such as `/$defs/schema-1a2b`): where the schema now sits in a bigger document."""
    if isinstance(schema, list):
        return [rebase_references(v, base) for v in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ("$ref", "$dynamicRef") and isinstance(value, str) and (value == "#" or value.startswith("#/")):
            out[key] = "#" + base + value[1:]
        else:
            out[key] = rebase_references(value, base)
    return out
