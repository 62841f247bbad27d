"""All registered codes, gathered from the per-family tables.

`_catalogue_f1` … `_catalogue_f6_f7` (one module a family) are the normative catalogue
(spec/diagnostics.md, a copy of the shared spec). Codes for syntax the spec does not have
yet live in their own topic tables below; `ADDED_CODES` names them, so the test that holds
the registry to the spec (tests/lang/test_codes.py) checks the rest exactly and these only
for not colliding with it. When the shared spec takes a code in, move its entry into the
family table."""

from __future__ import annotations

from flow_kernel.diagnostics._catalogue_budgets import ENTRIES as _BUDGETS
from flow_kernel.diagnostics._catalogue_durability import ENTRIES as _DURABILITY
from flow_kernel.diagnostics._catalogue_f1 import ENTRIES as _F1
from flow_kernel.diagnostics._catalogue_f2 import ENTRIES as _F2
from flow_kernel.diagnostics._catalogue_f3 import ENTRIES as _F3
from flow_kernel.diagnostics._catalogue_f4 import ENTRIES as _F4
from flow_kernel.diagnostics._catalogue_f5 import ENTRIES as _F5
from flow_kernel.diagnostics._catalogue_f6_f7 import ENTRIES as _F6_F7
from flow_kernel.diagnostics._catalogue_functions import ENTRIES as _FUNCTIONS
from flow_kernel.diagnostics._catalogue_panels import ENTRIES as _PANELS
from flow_kernel.diagnostics._catalogue_primary import ENTRIES as _PRIMARY
from flow_kernel.diagnostics._catalogue_prompt_vars import ENTRIES as _PROMPT_VARS
from flow_kernel.diagnostics._catalogue_protocols import ENTRIES as _PROTOCOLS
from flow_kernel.diagnostics._catalogue_providers import ENTRIES as _PROVIDERS

Entry = tuple[str, str, str, str, str, str]

# Codes added by issues beyond the normative catalogue, one table per topic (each file
# defines ENTRIES like the family tables). Add an import and a name to `_ADDED`.
_ADDED: tuple[tuple[Entry, ...], ...] = (
    _PANELS,  # prompt files, models chosen by purpose, rubrics and panels
    _DURABILITY,  # deadlines on the person
    _PROTOCOLS,  # tools lent by MCP servers
    _PROVIDERS,  # the `cost` limit
    _BUDGETS,  # budgets checked before a run
    _PROMPT_VARS,  # prompt variables, `max_tool_calls`
    _FUNCTIONS,  # user functions (`fn`)
    _PRIMARY,  # the primary artifact (`publish primary`)
)

# (code, severity letter E/W/I, one-line summary, explanation, failing example, fixed example)
ENTRIES: tuple[Entry, ...] = _F1 + _F2 + _F3 + _F4 + _F5 + _F6_F7 + tuple(entry for table in _ADDED for entry in table)
ADDED_CODES: frozenset[str] = frozenset(entry[0] for table in _ADDED for entry in table)
