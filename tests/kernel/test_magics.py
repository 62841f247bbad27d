"""Line magics, each with a clear error for bad arguments (unit level; the protocol tests
run them through the kernel)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from flow_kernel.frontend.magics import MAGICS, MagicError, parse_cell, plan_cell, type_of_json
from flow_kernel.lang import types as T
from flow_kernel.runtime.policy.trust import Capability, CapabilityDenied
from flow_kernel.runtime.session import Session


@pytest.fixture()
def session(tmp_path: Path) -> Session:
    return Session(directory=tmp_path, operator="none", sandbox=False)


def texts(plan: object) -> list[str]:
    return [b["text/plain"] for b in plan.outputs]  # type: ignore[attr-defined]


@pytest.mark.parametrize(("cell", "message"), [
    ("%nope", "unknown magic `%nope`"),
    ("%provider gpt-4", "is not a model"),
    ("%operator maybe", "unknown operator policy"),
    ("%record", "needs a cassette path"),
    ("%replay missing.jsonl", "cannot read the cassette"),
    ("%allow exec ls", "usage: %allow run EXE"),
    ("%allow run /bin/ls", "not a path"),
    ("%input 9 = 1", "usage: %input NAME = JSON"),
    ("%input x = {nope}", "not JSON"),
    ("%load", "usage: %load FILE.flow"),
    ("%load missing.flow", "cannot read missing.flow"),
    ("%schema", "usage: %schema NAME"),
    ("%schema Nothing", "no declaration `Nothing`"),
    ("%events", "usage: %events RUN"),
    ("%events r123", "no run `r123`"),
    ("%explain X9", "not a diagnostic code"),
    ("%tools", "usage: %tools FILE.py"),
    ("%tools tools.txt", "usage: %tools FILE.py"),
    ("%tools missing.py", "no file missing.py"),
    ('%allow run "unclosed', "%allow: No closing quotation"),
])
def test_bad_arguments_are_clear_errors(session: Session, cell: str, message: str) -> None:
    with pytest.raises(MagicError) as info:
        plan_cell(cell, session)
    assert message in str(info.value)


def test_configuration_magics_change_the_session(session: Session, tmp_path: Path) -> None:
    (tmp_path / "answers.json").write_text('{"Ship?": true}', encoding="utf-8")
    for word in ("operator:answers:answers.json", "run:echo", "run:git"):  # the person, in Python
        session.trust.grant(Capability.parse(word, tmp_path))
    plan = plan_cell("%provider mock\n%operator answers:answers.json\n%allow run echo git\n%record tape.jsonl\n"
                     'approve "Ship?"', session)
    assert session.config.default_model == "mock" and session.operator.policy == "answers"
    assert session.allow_run >= {"echo", "git"} and (tmp_path / "tape.jsonl").exists()
    assert plan.mode == "run" and plan.code == '\n\n\n\napprove "Ship?"'  # line numbers kept
    assert texts(plan)[0] == "default model: mock"
    assert session.run(plan.code).result is True


def test_load_runs_a_file_and_check_and_python_do_not_run(session: Session, tmp_path: Path) -> None:
    (tmp_path / "lib.flow").write_text("let loaded = 7\n", encoding="utf-8")
    plan = plan_cell("%load lib.flow", session)
    assert plan.code == "let loaded = 7\n" and plan.name == str(tmp_path / "lib.flow")
    with pytest.raises(MagicError, match="put nothing after it"):
        plan_cell("%load lib.flow\nlet x = 1", session)
    assert plan_cell("%check\nlet a = 1", session).mode == "check"
    assert plan_cell("%python\nlet a = 1", session).mode == "python"


def test_input_who_reset_lsmagic(session: Session) -> None:
    plan_cell('%input cfg = {"n": 2, "tags": ["a"]}', session)
    assert session.run("cfg.n + len(cfg.tags)").result == 3
    who = texts(plan_cell("%who", session))[0]
    assert who == 'let       cfg: {n: int, tags: string[]} = {"n": 2, "tags": ["a"]}'
    assert texts(plan_cell("%reset", session)) == ["the session is empty"]
    assert texts(plan_cell("%who", session)) == ["the session is empty"]
    listing = texts(plan_cell("%lsmagic", session))[0]
    assert all(f"%{name}" in listing for name in MAGICS)


def test_runs_and_events_read_the_journal(session: Session) -> None:
    outcome = session.run('print "x"')
    runs = texts(plan_cell("%runs", session))[0]
    assert outcome.run_id in runs and "completed" in runs
    events = texts(plan_cell(f"%events {outcome.run_id}", session))[0].splitlines()
    assert "workflow.started" in events[0] and "print" in events[1] and "workflow.completed" in events[-1]


def test_runs_lists_a_run_with_no_end_as_interrupted(session: Session) -> None:
    assert session.journal_dir is not None
    session.journal_dir.mkdir(parents=True, exist_ok=True)
    (session.journal_dir / "rdead.jsonl").write_text(
        '{"type": "workflow.started", "seq": 1, "span": {"id": "s1", "parent": null}, "data": {}}\n', encoding="utf-8")
    assert "interrupted" in texts(plan_cell("%runs", session))[0]


def test_type_of_json() -> None:
    assert T.display(type_of_json([1, 2.5])) == "number[]"
    assert T.display(type_of_json({"a": None, "b": [True]})) == "{a: null, b: bool[]}"
    assert type_of_json([]) == T.ArrayType(T.ANY)


def test_tools_runs_a_python_file_and_uses_its_flow_tools(session: Session, tmp_path: Path) -> None:
    session.trust.grant(Capability.parse("tools:shop.py", tmp_path))
    (tmp_path / "shop.py").write_text(
        "from flow_kernel import flow_tool\n\n"
        "@flow_tool\ndef stock(sku):\n    return {'sku': sku, 'left': len(sku)}\n\n"
        "@flow_tool(name='price')\ndef price_of(sku):\n    return 9.5\n\n"
        "def helper():\n    return 'not a tool'\n")
    plan = plan_cell("%tools shop.py", session)
    assert texts(plan) == ["tools from shop.py: price, stock"]
    assert set(session.tools.functions) == {"price", "stock"}
    program = ('tool stock(sku: string) -> {sku: string, left: int}\n'
               'agent clerk { model: "mock", tools: [stock], output: string }\n'
               'clerk("how many ABC are left?")\n')
    outcome = session.run(program)
    assert outcome.error is None, outcome.error
    calls = [e for e in outcome.events if e["type"] == "agent.completed"]
    assert calls and calls[0]["data"].get("tool_calls"), calls


def test_tools_reports_a_file_that_fails_or_registers_nothing(session: Session, tmp_path: Path) -> None:
    session.trust.grant(Capability.parse("tools:broken.py", tmp_path))
    session.trust.grant(Capability.parse("tools:plain.py", tmp_path))
    (tmp_path / "broken.py").write_text("x = 1\nraise ValueError('no database')\n")
    with pytest.raises(MagicError, match=r"broken.py failed at line 2: ValueError: no database"):
        plan_cell("%tools broken.py", session)
    (tmp_path / "plain.py").write_text("def lookup(x):\n    return x\n")
    with pytest.raises(MagicError, match="registers no tool"):
        plan_cell("%tools plain.py", session)


# -- capabilities: the magics ask, the person grants (docs/security.md) -------------------------
ASKING = [
    ("%allow run sh", [Capability("run", "sh")]),
    ("%allow run echo git", [Capability("run", "echo"), Capability("run", "git")]),
    ("%tools t.py", ["tools:t.py"]),
    ("%operator auto-approve", [Capability("operator", "auto-approve")]),
    ("%operator answers:a.json", ["operator:answers:a.json"]),
    ("%operator answers:../a.json", ["operator:answers:../a.json", "path:../a.json"]),
    ("%record ../tape.jsonl", ["path:../tape.jsonl"]),
    ("%replay ../tape.jsonl", ["path:../tape.jsonl"]),
    ("%load ../lib.flow", ["path:../lib.flow"]),
]


@pytest.mark.parametrize(("cell", "wanted"), ASKING, ids=[c for c, _ in ASKING])
def test_magics_that_grant_only_ask(session: Session, tmp_path: Path, cell: str, wanted: list[object]) -> None:
    """Each capability magic names what it asks for, and without a grant the cell is
    refused with how to grant it, before anything of it applies."""
    (tmp_path / "t.py").write_text("@flow_tool\ndef t(x: str) -> str:\n    return x\n")
    needs = [w if isinstance(w, Capability) else Capability.parse(str(w), tmp_path) for w in wanted]
    parsed = parse_cell(cell + "\n%provider mock\n1")
    assert parsed.needs(session) == needs and parsed.missing(session) == needs
    with pytest.raises(CapabilityDenied) as denied:
        plan_cell("%provider mock\n" + cell, session)
    assert "FLOW_ALLOW=" in str(denied.value) and "flow trust" in str(denied.value)
    assert session.config.default_model != "mock"  # the magic before it did not apply either
    assert "sh" not in session.allow_run and session.operator.policy == "none" and not session.tools.functions


def test_paths_inside_the_folder_and_harmless_policies_ask_nothing(session: Session, tmp_path: Path) -> None:
    (tmp_path / "lib.flow").write_text("let x = 1\n")
    cell = "%record sub/../tape.jsonl\n%operator auto-deny\n%operator none\n%operator interactive\n%allow\n%record off\n"
    assert parse_cell(cell).needs(session) == []
    assert parse_cell("%load lib.flow").needs(session) == []
    plan_cell(cell, session)


def test_a_symlink_out_of_the_folder_is_outside(session: Session, tmp_path: Path) -> None:
    outside = tmp_path.parent / f"{tmp_path.name}-outside.jsonl"
    folder = tmp_path / "nb"
    folder.mkdir()
    (folder / "tape.jsonl").symlink_to(outside)
    inner = Session(directory=folder, operator="none", sandbox=False, journal_dir=None)
    assert parse_cell("%record tape.jsonl").needs(inner) == [Capability("path", str(outside.resolve()))]
    with pytest.raises(CapabilityDenied):
        plan_cell("%record tape.jsonl", inner)
    assert not outside.exists()


def test_needs_is_pure_and_checks_arguments_first(session: Session, tmp_path: Path) -> None:
    """Asking computes nothing on the host: the tools file is not run, the cassette not
    made; a typo is a MagicError before anyone is asked."""
    (tmp_path / "t.py").write_text(f"open({str(tmp_path / 'ran')!r}, 'w').close()\n")
    assert parse_cell("%tools t.py\n%record tape.jsonl").needs(session) == [Capability.parse("tools:t.py", tmp_path)]
    assert not (tmp_path / "ran").exists() and not (tmp_path / "tape.jsonl").exists()
    with pytest.raises(MagicError, match="not a path"):
        parse_cell("%allow run /bin/sh").needs(session)
    with pytest.raises(MagicError, match=r"no file nope\.py"):
        parse_cell("%tools nope.py").needs(session)


def test_a_trusted_folder_grants_what_its_notebooks_ask(session: Session, tmp_path: Path,
                                                        trust_folder: Callable[[Path], None]) -> None:
    (tmp_path / "t.py").write_text("@flow_tool\ndef t2(x: str) -> str:\n    return x\n")
    trust_folder(tmp_path)
    assert parse_cell("%allow run sh\n%tools t.py\n%operator auto-approve").missing(session) == []
    plan_cell("%allow run sh\n%tools t.py\n%operator auto-approve", session)
    assert "sh" in session.allow_run and session.operator.policy == "auto-approve"


def test_a_magic_applied_without_asking_is_still_refused(session: Session) -> None:
    """Defence in depth: a caller that skips `needs` (applies a magic directly) is refused."""
    from flow_kernel.frontend.magics import CellPlan

    with pytest.raises(CapabilityDenied):
        MAGICS["allow"].apply(session, "run sh", CellPlan())
    assert "sh" not in session.allow_run


def test_allow_run_takes_pinned_arguments_and_a_plain_grant_covers_them(session: Session, tmp_path: Path) -> None:
    """`%allow run 'cat /etc/hosts'` pins cat's arguments (a path among them is fine: only
    the executable must be a name); FLOW_ALLOW="run:cat" covers the pinned entry."""
    needs = parse_cell("%allow run 'cat /etc/hosts' 'git log *'").needs(session)
    assert needs == [Capability("run", "cat /etc/hosts"), Capability("run", "git log *")]
    assert not session.trust.granted(needs[0])
    session.trust.grant(Capability("run", "cat"))
    assert session.trust.granted(needs[0]) and not session.trust.granted(needs[1])
