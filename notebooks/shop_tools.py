"""Tools for lesson 7 (07-tools-and-processes.ipynb), loaded with `%tools shop_tools.py`.

Each `@flow_tool` function implements the Flow `tool` declaration of the same name. Tools
run on the host, in the kernel's Python, never in the sandbox: this is where a workflow
may touch a database, an API or a file, so keep them small and check what they are given.
"""

from flow_kernel import flow_tool

ORDERS = {
    "A-1001": {"status": "shipped", "total": 42.0, "items": ["kettle"]},
    "A-1002": {"status": "delivered", "total": 12.5, "items": ["mug", "spoon"]},
}
ARTICLES = [
    "Refunds are issued to the original payment method within 5 days.",
    "Orders ship within 2 working days.",
    "A damaged item can be returned free of charge.",
]


@flow_tool
def lookup_order(order_id: str) -> dict:
    """The order, or a not-found answer the model can read (not an exception)."""
    order = ORDERS.get(order_id)
    if order is None:
        return {"found": False, "status": "unknown", "total": 0}
    return {"found": True, "status": order["status"], "total": order["total"]}


@flow_tool
def search_kb(query: str, limit: int = 2) -> list:
    """Articles sharing a word with the query, best first (a stand-in for a search index)."""
    words = {w.strip(".,?!").lower() for w in query.split()}
    scored = sorted(ARTICLES, key=lambda a: -len(words & {w.strip(".,").lower() for w in a.split()}))
    return scored[: max(0, min(limit, 5))]


@flow_tool
def refund(order_id: str, amount: float) -> dict:
    """Money leaves the company here: the Flow declaration says `requires approval`."""
    return {"ok": True, "order_id": order_id, "refunded": round(float(amount), 2)}


@flow_tool
def shipping_quote(country: str) -> dict:
    """A tool that fails: its exception goes back to the model as {"error": ...}."""
    raise ConnectionError("the carrier's API is down")
