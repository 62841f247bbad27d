"""Workflow inputs and outputs the sandbox can see are valid without asking the host.

The host validates a nested workflow call's input and output against the workflow's JSON
Schemas (runtime/host.py `validate_workflow`): one bridge round trip each, at every call.
For a schema of one of a few shapes the answer follows from the value's class alone, and
the compiler says which shape each schema has (lang/codegen.py `local_checks`, the fourth
element of a workflow's row in the table `rt.start` reads): "integer", "string" and
"boolean" for `{"type": t}`, "any" for `{}`. A value that passes here is one the host
would accept; any other value, or a schema of another shape (None), is still validated by
the host, which words the error.
"""

# The exact class: `True` is not an "integer" to JSON Schema, nor `1.0` to this check
# (the host decides about a float with no fraction, as before).
LOCAL_TYPES = {"integer": int, "string": str, "boolean": bool}


def passes(kind, value):
    """Whether `value` certainly satisfies the schema `kind` names (None: none is known)."""
    if kind == "any":
        return True
    cls = LOCAL_TYPES.get(kind)
    return cls is not None and type(value) is cls


def inputs_pass(kinds, values):
    """Whether every input value passes its parameter's kind (`kinds` None: not known)."""
    return kinds is not None and len(kinds) == len(values) and all(map(passes, kinds, values))
