"""`publish NAME e` and `publish primary NAME e` (language-guide.md "Artifacts"): an
artifact's name checked, its event's data, and the run's one primary artifact.

The name is a relative path of `[A-Za-z0-9._-]` segments without `..` (anything else is
`capability-violation`). A run publishes at most one primary artifact: the checker refuses
two it can see on one path (F6010); a second one reached at run time (a loop, a workflow
called twice, parallel branches) stops the run with `limit-exceeded` (`limit: "primary"`),
naming the first."""

from __future__ import annotations

import re

from . import values as _values
from .errors import FlowError

PUBLISH_NAME = re.compile(r"^[A-Za-z0-9._-]+(?:/[A-Za-z0-9._-]+)*$")


def artifact(name, value, primary, published):
    """The `artifact.published` event's data for `publish [primary] name value`; `published`
    is the run's list of primary artifact names so far (appended to for a primary one)."""
    if not isinstance(name, str) or not PUBLISH_NAME.match(name) or ".." in name.split("/"):
        raise FlowError("capability-violation", f"`publish`: {_values.render(name)} is not a relative artifact path "
                        "of [A-Za-z0-9._-] segments", {"name": name})
    _values.check_depth(value, f"the artifact {name!r}")
    data = {"name": name, "text": value} if isinstance(value, str) else {"name": name, "json": value}
    if primary:
        if published:
            raise FlowError("limit-exceeded", f"`publish primary`: a run publishes at most one primary artifact, and "
                            f"`{published[0]}` was published first; publish `{name}` without `primary`",
                            {"limit": "primary", "value": 1, "first": published[0], "name": name})
        published.append(name)
        data["primary"] = True
    return data
