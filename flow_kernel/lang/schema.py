"""Flow types → JSON Schema draft 2020-12 (language.md §3.1)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from flow_kernel.lang import types as T
from flow_kernel.lang.env import DeclEntry
from flow_kernel.lang.schema_rules import has_references, rebase_references

DIALECT = "https://json-schema.org/draft/2020-12/schema"
JSON = dict[str, Any]


class SchemaBuilder:
    """Builds schemas; every alias reached is emitted once under `$defs`."""

    def __init__(self) -> None:
        self.defs: dict[str, JSON] = {}

    def build(self, t: T.Type) -> JSON:
        if isinstance(t, T.Named):
            if t.name not in self.defs:
                self.defs[t.name] = {}  # placeholder: stops runaway recursion
                self.defs[t.name] = self.build(t.resolved)
            return {"$ref": f"#/$defs/{t.name}"}
        if isinstance(t, T.AnyType):
            return self.raw(dict(t.raw_schema)) if t.raw_schema is not None else {}
        if isinstance(t, T.Prim):
            if t.name == "duration":
                schema: JSON = {"type": "integer", "minimum": 0}
            else:
                schema = {"type": {"int": "integer", "bool": "boolean"}.get(t.name, t.name)}
            schema.update(dict(t.constraints))
            return schema
        if isinstance(t, T.Literal):
            return {"const": t.value}
        if isinstance(t, T.ArrayType):
            schema = {"type": "array", "items": self.build(t.item)}
            schema.update(dict(t.constraints))
            return schema
        if isinstance(t, T.ObjectType):
            return {
                "type": "object",
                "properties": {name: self.build(f.type) for name, f in t.fields},
                "required": [name for name, f in t.fields if not f.optional],
                "additionalProperties": t.open,
            }
        if isinstance(t, T.UnionType):
            opts = t.options
            if all(isinstance(o, T.Literal) and isinstance(o.value, str) for o in opts):
                return {"type": "string", "enum": [o.value for o in opts if isinstance(o, T.Literal)]}
            return {"anyOf": [self.build(o) for o in opts]}
        return {}

    def raw(self, schema: JSON) -> JSON:
        """A raw `schema { … }` where it is used. Its `#/…` references (checked to stay in
        it, schema_rules.py) mean its own root, which is not the document's root once it is
        nested: such a schema is placed under `$defs` and its references moved with it."""
        schema.pop("$schema", None)  # the document's root says the dialect (only 2020-12 passes the check)
        if not has_references(schema):
            return schema
        name = "schema-" + hashlib.sha256(json.dumps(schema, sort_keys=True).encode()).hexdigest()[:12]
        if name not in self.defs:
            self.defs[name] = rebase_references(schema, f"/$defs/{name}")
        return {"$ref": f"#/$defs/{name}"}

    def document(self, t: T.Type) -> JSON:
        body = self.build(t)
        doc: JSON = {"$schema": DIALECT, **body}
        if self.defs:
            doc["$defs"] = dict(sorted(self.defs.items()))
        return doc


def type_schema(t: T.Type) -> JSON:
    """A standalone schema document for one type."""
    return SchemaBuilder().document(t)


def input_type(params: list[tuple[str, T.Type, bool]]) -> T.ObjectType:
    return T.ObjectType(tuple((name, T.Field(t, optional)) for name, t, optional in params), open=False)


def schema_for_decl(entry: DeclEntry) -> JSON | None:
    """The schema of a type alias, or `{"input", "output"}` for a workflow or tool
    (aliases they mention are reached through their `Named` targets)."""
    if entry.kind == "type" and entry.named is not None:
        return type_schema(entry.named)
    if entry.kind == "workflow" and entry.workflow is not None:
        out = entry.workflow.returns if entry.workflow.returns is not None else T.ANY
        return {"input": type_schema(input_type(entry.workflow.params)), "output": type_schema(out)}
    if entry.kind == "tool" and entry.tool is not None:
        return {"input": type_schema(input_type(entry.tool.params)), "output": type_schema(entry.tool.returns)}
    if entry.kind == "agent" and entry.agent is not None:
        return {"output": type_schema(entry.agent.output)}
    return None
