"""Lesson 8 · Record and replay."""

from __future__ import annotations

from lessons import RAISES, code, md

NAME = "08-record-and-replay"

# The cells that call models, in order: notebooks/cassettes/record.py runs exactly these
# (after %record) to make the committed cassette, and the notebook replays them.
DECLARE = code("""
type Note = { title: string, summary: string, audience: "users" | "developers" }
type Review = { approved: bool, comments: string[] }

agent writer {
  model: "openai/gpt-4o-mini"
  role: "technical writer"
  instructions: "Write one release note for the change you are given."
  constraints: ["One sentence per summary", "Never promise dates"]
  output: Note
  repair: 1
}

agent editor {
  model: "anthropic/claude-sonnet-4-5"
  role: "editor-in-chief"
  instructions: "Review the release notes in the context. Approve them or say what to fix."
  output: Review
}

let changes = [
  "Exports to CSV are three times faster",
  "New API endpoint /v2/search with pagination",
  "Dark mode in the settings page",
]
""")
WRITE = code("""
let notes = parallelMap(changes, change => writer("Change: ${change}"), concurrency: 3)
notes[*].title
""")
REVIEW = code("""
let review = editor("Review the release notes for version 2.4", context: { notes: notes })
review
""")
RECORDED = [DECLARE, WRITE, REVIEW]

CELLS = [
    md("""
    # 8 · Record and replay

    A notebook that calls a real model gives a different answer every time it runs,
    costs money, and needs a key — so it can neither be tested nor shared as it is.
    Flow's answer is the *cassette*: record every answer a model gives once, commit the
    file, and replay it. A replayed run is the same run: same results, same events,
    no network, no key.

    **What you will learn**

    - `%replay FILE`: answer agent calls from a cassette (the `replay` provider);
    - what a cassette holds (and what it never holds: keys, headers, endpoints);
    - why a changed prompt is a *miss* rather than a stale answer;
    - exploring under `%replay`: cells run again or out of order replay their own
      answers, an edited cell misses with a diff, recording again replaces;
    - `%record FILE`: recording against your own OpenAI-compatible or Anthropic endpoint.

    The agents below use real providers: `openai/gpt-4o-mini` through the
    OpenAI-compatible Chat Completions API and `anthropic/claude-sonnet-4-5` through the
    Anthropic Messages API. The cassette replayed here,
    [`cassettes/08-release-notes.jsonl`](cassettes/08-release-notes.jsonl), was recorded
    by [`cassettes/record.py`](cassettes/record.py) through both providers' official
    clients — against a local stand-in server that speaks those APIs, so that anyone can
    re-record it offline. Point the same script at a real endpoint and the cassette holds
    a real model's answers instead; nothing else changes.
    """),
    md("""
    ## Replaying

    `%replay` makes every following cell answer agent calls from the cassette. Without
    it, the cells below would call the APIs (and fail here, where there is no key and no
    network).
    """),
    code("""
    %replay cassettes/08-release-notes.jsonl
    """),
    DECLARE,
    md("""
    Three changes, three notes, written in parallel. The run view shows each call with
    its attempts: one of the recorded answers broke the contract (an audience that is
    neither `"users"` nor `"developers"`) and was repaired — the cassette keeps every
    attempt, so the replay walks the same repair and shows the same events.
    """),
    WRITE,
    md("""
    The editor gets the notes as `context` — data, marked as untrusted in the prompt
    (lesson 3) — and answers through the Anthropic provider:
    """),
    REVIEW,
    md("""
    ## What a cassette holds

    A cassette is JSON lines, one per provider attempt:

    ```json
    {"scope":"cell:b4e9…","agent":"writer","label":"writer@1:44","occurrence":1,"attempt":1,"prompt_hash":"…","prompt":"…","output":{"title":"…"},"usage":{…}}
    ```

    `scope` is the cell (by a hash of its text: a cell's number changes on every run, its
    text does not) or the file, and the workflow run; `occurrence` counts calls with the
    same agent and label *within the run* (in the order they start, which is
    deterministic even inside `parallelMap`), so running an unchanged cell again replays
    the same answers again; `attempt` counts repairs and retries, and `prompt_hash`
    identifies the exact prompt (`prompt` keeps its text, to show what changed). There is
    no key, header, URL or provider setting in it: a cassette can be committed and shared.
    Recording a cell again replaces that cell's answers and keeps every other cell's.

    ## A changed prompt is a miss

    Replay is exact on purpose. A call is found in the cassette by its cell or file, its
    agent, its label (by default where the call is written), how many such calls came
    before it in the run, the attempt, and the hash of its prompt. Change a prompt, or add
    a call the recording never made, and there is no answer for it: the call fails with
    `agent-invocation`, naming the call and the nearest recorded request with a short diff
    of the prompt, instead of quietly returning an answer to a different question.
    """),
    code("""
    writer("Change: Dark mode everywhere")
    """, RAISES),
    md("""
    ## Exploring under `%replay`: run again, reorder, edit

    A notebook is explored, not run once from top to bottom: cells are run again, run
    out of order, edited. Under `%replay` each cell finds *its own* answers wherever and
    however often it runs, because a cell is known by its text and its calls are counted
    within each run, not across the session.

    **Running a cell again** replays the same answers. The cell below is the writing cell
    from above, word for word, which is exactly what running that cell again is:
    """),
    WRITE,
    md("""
    **Order does not matter.** The review was recorded after the notes were written;
    run it again now, after the writing cell ran a second time, and it finds its answer
    just the same:
    """),
    REVIEW,
    md("""
    **An edited cell misses, and says what changed.** Edit the writing cell's prompt — here
    `Change:` becomes `Release note for:` — and its calls are no longer the recorded ones.
    The error names the call and shows the nearest recorded request with a diff of the
    prompt, `-` what was recorded and `+` what the cell asks now. (Editing a cell without
    changing any prompt, say adding a comment, misses too, and the message says the
    prompt is the same: a cell is known by its text.)
    """),
    code("""
    let renamed = parallelMap(changes, change => writer("Release note for: ${change}"), concurrency: 3)
    renamed[*].title
    """, RAISES),
    md("""
    **Recording again replaces.** To take the edit in, record it: with
    `%record cassettes/08-release-notes.jsonl` (and a provider that answers) run the
    edited cell, then `%replay` the same file again. Recording a cell replaces that
    cell's entries and keeps every other cell's, so running a cell twice while recording
    does not pile up answers. An edited cell is a new text, so its answers are added
    beside the old text's, which stay until you record the whole notebook into a fresh
    file (as `cassettes/record.py` does for this one).

    `%replay off` stops replaying; the agents would then call their providers again.

    ## Recording against your own endpoint

    To record, start a cassette with `%record` and run the cells; every completed
    answer is written as it arrives. For an OpenAI-compatible server — OpenAI itself,
    vLLM, Ollama, llama.cpp, LM Studio — set the endpoint and the key in the
    environment before starting Jupyter (or name them in a `flow.toml` beside the
    notebook, lesson 11):

    ```bash
    export OPENAI_BASE_URL=http://localhost:11434/v1   # e.g. Ollama; leave unset for OpenAI
    export OPENAI_API_KEY=...                           # the key stays on the host
    export ANTHROPIC_API_KEY=...
    jupyter lab
    ```

    and then, in the notebook:

    ```
    %record cassettes/my-run.jsonl
    ```

    The key is read by the provider's official client on the host; it never enters the
    sandbox, an event, a journal, a notebook output or the cassette. Replace `%record`
    with `%replay` and the notebook runs offline from then on — which is how this
    gallery is tested in CI.
    """),
]
