"""`flow schema FILE NAME`: the JSON Schema of a type alias, or {"input": …, "output": …}
for a workflow. Exit 0, 1 when FILE has errors or declares no NAME, 2 when FILE cannot
be read."""

from __future__ import annotations

import argparse
import difflib
import json
import sys
from typing import Any

from flow_kernel.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    display_name,
    guarded_loader,
    load_file,
    print_error,
    wants_color,
)
from flow_kernel.terminal_text import json_for_terminal


def add_command(commands: Any) -> None:
    schema = commands.add_parser(
        "schema",
        help="print the JSON Schema of a type or a workflow",
        description='Print the JSON Schema of a type alias, or {"input": …, "output": …} '
        "for a workflow.",
    )
    schema.add_argument("file", metavar="FILE", help="a .flow file")
    schema.add_argument("name", metavar="NAME", help="a type alias or workflow in FILE")
    schema.add_argument("--allow-path", metavar="PATH", action="append", default=[],
                        help="let FILE `use` PATH outside its folder")
    schema.set_defaults(handler=cmd_schema)


def cmd_schema(args: argparse.Namespace) -> int:
    from flow_kernel.diagnostics.render import render_text

    try:
        result = load_file(guarded_loader(args.file, args.allow_path), args.file)
    except UsageError as e:
        print_error(str(e), command="schema")
        return EXIT_USAGE
    if not result.ok:
        errors = [d for d in result.diagnostics if d.is_error]
        sys.stderr.write(
            render_text(errors, color=wants_color(sys.stderr), display_name=display_name) + "\n"
        )
        print_error(f"{args.file} has errors; fix them to get a schema", command="schema")
        return EXIT_FAILED
    schema: dict[str, Any] | None = result.schema_for(args.name)
    if schema is None:
        known = sorted(n for n in getattr(result, "decls", {}) if result.schema_for(n) is not None)
        message = f"`{args.name}` is not a type or workflow declared in {args.file}"
        close = difflib.get_close_matches(args.name, known, n=1)
        if close:
            message += f"; did you mean `{close[0]}`?"
        elif known:
            message += "; it declares " + ", ".join(f"`{n}`" for n in known)
        print_error(message, command="schema")
        return EXIT_FAILED
    sys.stdout.write(json_for_terminal(json.dumps(schema, indent=2, ensure_ascii=False)) + "\n")
    return EXIT_OK


__all__ = ["add_command", "cmd_schema"]
