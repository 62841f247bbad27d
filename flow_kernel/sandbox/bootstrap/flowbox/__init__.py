"""flowbox: the trusted Python that runs inside the Pyodide sandbox.

It owns the `rt` object that compiled Flow modules call (`runtime.py`), the value
semantics (`values.py`, `operators.py`, `builtins.py`) and the line bridge to the
host (`bridge.py`). It imports only the standard library: it is shipped as source
into Pyodide and never imports the host package."""
