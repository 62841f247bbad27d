"""Runtime errors of Flow (runtime.md §5). One class per code; `catch` and `retry.on`
match the code, never the message.

    FlowError
     ├── WorkflowInputValidationError   workflow-input-validation
     ├── OutputValidationError          output-validation
     ├── AgentInvocationError           agent-invocation
     ├── CapabilityViolationError       capability-violation
     ├── LimitExceededError             limit-exceeded
     ├── WorkflowTimeoutError           workflow-timeout
     ├── WorkflowAssertionError         assertion
     ├── FlowCancelledError             cancelled
     ├── FlowIsolateError               isolate
     ├── FlowWorkerCrashedError         worker-crashed
     ├── FlowEvaluationError            evaluation
     ├── OperatorUnavailableError       operator-unavailable
     └── ProcessError                   process

Errors cross the bridge as DTOs `{"__flowError": true, "code", "message", "stage",
"span", "details"}`; `FlowError.from_dto` rebuilds the typed error on the host.
`span` is a location in Flow source (`{"file", "line", "column", "end_line",
"end_column"}`), never in generated Python.
"""

from __future__ import annotations

from typing import Any, ClassVar


class FlowError(Exception):
    code: ClassVar[str] = "evaluation"
    by_code: ClassVar[dict[str, type[FlowError]]] = {}

    def __init__(self, message: str, *, stage: str | None = None, span: dict[str, Any] | None = None,
                 details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.stage = stage
        self.span = span
        self.details = details or {}
        # The DTO this error was rebuilt from, with what the sandbox adds beside the
        # public fields (`loc` in the generated module, `bindings`, `steps`).
        self.dto: dict[str, Any] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        FlowError.by_code[cls.code] = cls

    def to_dto(self) -> dict[str, Any]:
        return {"__flowError": True, "code": self.code, "message": self.message, "stage": self.stage,
                "span": self.span, "details": self.details}

    @staticmethod
    def from_dto(dto: dict[str, Any]) -> FlowError:
        cls = FlowError.by_code.get(str(dto.get("code")), FlowIsolateError)
        message = str(dto.get("message", ""))
        if cls is FlowIsolateError and dto.get("code") != "isolate":
            message = f"unknown error code {dto.get('code')!r}: {message}"
        details = dto.get("details")
        span = dto.get("span")
        stage = dto.get("stage")
        error = cls(message, stage=stage if isinstance(stage, str) else None, span=_flow_span(span),
                    details=details if isinstance(details, dict) else None)
        error.dto = dto
        return error

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code!r}, {self.message!r})"


def _flow_span(span: Any) -> dict[str, Any] | None:
    """A span from the other side of the bridge if it is a Flow location (a file name and
    whole-number positions), else None: the error report, the run view and the kernel
    compute carets and source lines from it, and a forged one must not break them."""
    if not isinstance(span, dict) or not isinstance(span.get("file"), str):
        return None
    numbers = [span.get(k) for k in ("line", "column", "end_line", "end_column")]
    if not all(isinstance(n, int) and not isinstance(n, bool) and 0 <= n < 2**31 for n in numbers):
        return None
    return dict(span)


class WorkflowInputValidationError(FlowError):
    code = "workflow-input-validation"


class OutputValidationError(FlowError):
    code = "output-validation"


class AgentInvocationError(FlowError):
    code = "agent-invocation"


class CapabilityViolationError(FlowError):
    code = "capability-violation"


class LimitExceededError(FlowError):
    code = "limit-exceeded"


class WorkflowTimeoutError(FlowError):
    code = "workflow-timeout"


class WorkflowAssertionError(FlowError):
    code = "assertion"


class FlowCancelledError(FlowError):
    code = "cancelled"


class FlowIsolateError(FlowError):
    code = "isolate"


class FlowWorkerCrashedError(FlowError):
    code = "worker-crashed"


class FlowEvaluationError(FlowError):
    code = "evaluation"


class OperatorUnavailableError(FlowError):
    code = "operator-unavailable"


class ProcessError(FlowError):
    code = "process"


FlowError.by_code["evaluation"] = FlowEvaluationError

# The one list of runtime error codes (runtime.md §5), in the order above: the checker
# (`catch`, `retry.on`), codegen and the sandbox pool read these. The sandbox cannot import
# this package (it runs in Pyodide): flowbox/errors.py keeps its own copy of FATAL, and
# tests/sandbox/test_error_codes.py checks that it and every code flowbox raises are these.
RUNTIME_CODES: tuple[str, ...] = tuple(FlowError.by_code)
# Errors that end the run: no `catch` takes them (F5017) and the sandbox does not retry them.
FATAL: tuple[str, ...] = ("limit-exceeded", "workflow-timeout", "cancelled", "isolate", "worker-crashed")
# The codes `retry.on` may name: an agent call's own failures.
RETRYABLE: tuple[str, ...] = ("agent-invocation", "output-validation")
