"""Cycle finding for the alias and workflow-call graphs (F2010, F2009)."""

from __future__ import annotations

from collections.abc import Iterator


def find_cycles(nodes: list[str], edges: dict[str, list[str]]) -> list[list[str]]:
    """One cycle per back edge of a single iterative depth-first pass: linear in the
    graph, deterministic in the order of `nodes` and of each edge list."""
    on_path: dict[str, int] = {}  # node -> its index in `path`
    done: set[str] = set()
    cycles: list[list[str]] = []
    for root in nodes:
        if root in done:
            continue
        path = [root]
        on_path[root] = 0
        stack: list[Iterator[str]] = [iter(edges.get(root, []))]
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                stack.pop()
                node = path.pop()
                del on_path[node]
                done.add(node)
                continue
            if nxt in on_path:
                cycles.append(path[on_path[nxt]:])
            elif nxt not in done and nxt in edges:
                on_path[nxt] = len(path)
                path.append(nxt)
                stack.append(iter(edges.get(nxt, [])))
    return cycles
