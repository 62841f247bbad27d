"""Errors raised inside the sandbox, and where in the generated code one was raised
(`location`). They leave it as DTOs (`to_dto`); the host rebuilds typed errors from the
code. Shipped into Pyodide as source: imports only the standard library."""

from __future__ import annotations

FATAL = frozenset({"limit-exceeded", "workflow-timeout", "cancelled", "isolate", "worker-crashed"})


class FlowError(Exception):
    """A Flow runtime error with a code of runtime.md §5."""

    def __init__(self, code, message, details=None, stage=None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details if details is not None else {}
        self.stage = stage
        self.loc = None  # (line, col, end_line, end_col) in the generated module, set when raised
        self.extra = {}  # run facts that travel with the error (bindings made, steps used)

    @property
    def fatal(self):
        return self.code in FATAL

    def to_dto(self):
        dto = {"__flowError": True, "code": self.code, "message": self.message, "stage": self.stage,
               "span": None, "details": self.details, "loc": list(self.loc) if self.loc else None}
        dto.update(self.extra)
        return dto


def evaluation(message, **details):
    """The error of a failed evaluation: a missing field on `any`, bad `parseJson`, …"""
    return FlowError("evaluation", message, details)


def location(exc):
    """(line, col, end_line, end_col) of the innermost generated-code frame of `exc`."""
    loc = None
    tb = exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename == "<flow>" and tb.tb_lasti >= 0:
            positions = list(code.co_positions())
            index = tb.tb_lasti // 2
            if index < len(positions):
                line, end_line, col, end_col = positions[index]
                if line is not None:
                    loc = (line, col or 0, end_line or line, end_col or 0)
        tb = tb.tb_next
    return loc


def context_location(exc):
    """The location of `exc`, or of the error it was raised while handling."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        loc = location(exc)
        if loc is not None:
            return loc
        exc = exc.__context__
    return None


def stack_failure(functions_called):
    """The code and message of Python's stack running out (`RecursionError`). Values are
    bounded where they nest (builtins, the bridge) and bodies nest as far as the text
    does, so in a run that called a user function it is that function's recursion."""
    if functions_called:
        return "limit-exceeded", ("function calls nested too deeply: the recursion ran out of stack before the "
                                  "`steps` limit (does it end?)")
    return "isolate", "the sandbox ran out of stack"
