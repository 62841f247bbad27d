"""Lesson 3 · Agents: contracts, repair and retry."""

from __future__ import annotations

from lessons import RAISES, code, md

NAME = "03-agents-contracts-repair-retry"

CELLS = [
    md("""
    # 3 · Agents: contracts, repair and retry

    An LLM is an unreliable function: the same question may come back malformed, off
    topic, late, or not at all. Flow's answer is to put a *contract* around every agent
    call — the output type, extra `expect` checks, a timeout — and to say, in the agent's
    declaration, what to do when the contract is broken: ask again with the errors
    (*repair*), start over (*retry*), or settle for a default (*fallback*).

    **What you will learn**

    - declaring an `agent` with an `output:` type, and calling it;
    - the deterministic `scripted` and `mock` models, for lessons and tests;
    - the repair loop: invalid answers are sent back with their validation errors;
    - `expect` clauses: checks of your own that feed the same loop;
    - `retry` on `agent-invocation` errors, `timeout`, `choice` and `fallback`;
    - catching a failed call with `try`/`catch`, and what an uncaught one looks like.

    Every agent here uses `model: "scripted"` (the answers are written in the agent's
    `script`) or `model: "mock"`, so the lesson runs the same way every time, offline.
    Swap in `"openai/gpt-4o-mini"` or `"anthropic/…"` and the code stays the same.
    """),
    md("""
    ## An agent with a contract

    An agent declaration is a prompt made of parts — `role`, `instructions`,
    `constraints`… — and an `output` type. The type becomes a JSON Schema the model is
    asked to follow, and every answer is validated against it.

    This scripted classifier answers badly on purpose: first with a label that is not
    one of the literals, then with a confidence out of range, and only then correctly.
    `repair: 2` allows two repairs after the first attempt.
    """),
    code("""
    type Verdict = {
      label: "spam" | "ham",
      confidence: number(minimum: 0, maximum: 1),
    }

    agent classifier {
      model: "scripted"
      role: "mail filter"
      instructions: "Decide whether the message is spam."
      constraints: ["Answer only about the message you are given"]
      output: Verdict
      repair: 2
      script: [
        { label: "SPAM", confidence: 0.9 },
        { label: "spam", confidence: 90 },
        { label: "spam", confidence: 0.97 },
      ]
    }
    """),
    code("""
    let verdict = classifier("WIN A FREE CRUISE!!! Reply with your bank details")
    verdict
    """),
    md("""
    The run view shows the agent card with its three attempts and, for each failed one,
    the validation errors. Those errors are exactly what the model receives with its
    previous answer when it is asked to repair: it learns what was wrong, not just that
    something was. Open the card (▸) to see the prompt.

    Because `verdict` has type `Verdict`, the rest of the program can rely on it:
    `verdict.label` is `"spam" | "ham"`, never anything else.
    """),
    code("""
    verdict.label == "spam" ? "move to junk" : "keep in inbox"
    """),
    md("""
    ## `expect`: checks a schema cannot express

    A schema says what shape an answer has; it cannot say that the answer is about the
    right order. `expect` clauses after the call can: inside the condition, `it` is the
    candidate answer, already schema-valid and typed, and the condition may use the
    cell's names. A failed expectation is treated like invalid output — its message goes
    back to the model, so write it as an instruction.
    """),
    code("""
    agent summarizer {
      model: "scripted"
      output: { order: string, summary: string }
      repair: 2
      script: [
        { order: "24", summary: "A customer wants a refund for a broken order." },
        { order: "42", summary: "A customer wants a refund for a broken order." },
        { order: "42", summary: "Refund requested: order 42 arrived broken." },
      ]
    }

    let order = "42"
    let s = summarizer("Summarise: my order ${order} arrived broken, I want my money back")
      expect it.order == order : "quote the order number from the message"
      expect order in it.summary : "mention the order number in the summary"
    s.summary
    """),
    md("""
    ## When repairs run out

    Repairs are a budget, not a promise. This agent keeps answering a string where an
    `int` is required; after its one repair the call fails with `output-validation`.
    Every runtime error has a *code*, and `try … catch "code" as err` catches by code —
    `err` holds the code, the message, the stage and details.
    """),
    code("""
    agent counter {
      model: "scripted"
      output: int
      repair: 1
      script: ["forty-two"]
    }

    var answer = 0
    try {
      answer = counter("How many items are in the box?")
    } catch "output-validation" as err {
      print "gave up: ${err.code}: ${err.message}"
      answer = -1
    }
    answer
    """),
    md("""
    ## Retry: when the call itself fails

    Repair is for bad answers; *retry* is for calls that produce no answer at all — a
    provider returning 503, a dropped connection. `retry` lists the error codes worth
    another try (only `agent-invocation` and `output-validation` may be retried),
    the total number of attempts, and a pause between them. The script's `fail(...)`
    entries simulate failures.
    """),
    code("""
    agent flaky {
      model: "scripted"
      retry: { on: ["agent-invocation"], attempts: 3, backoff: 50ms }
      script: [
        fail("agent-invocation", "503 Service Unavailable"),
        fail("agent-invocation", "connection reset by peer"),
        "Here is your answer, on the third try.",
      ]
    }

    flaky("Say something useful")
    """),
    md("""
    ## Timeouts

    `timeout` bounds each attempt. A `slow(delay, value)` script entry answers after a
    delay: the first attempt below takes a second against a 200 ms timeout, fails with
    `agent-invocation`, and the retry (a fresh attempt) is quick enough. Without the
    retry, the timeout would fail the call.
    """),
    code("""
    agent slowpoke {
      model: "scripted"
      timeout: 200ms
      retry: { on: ["agent-invocation"], attempts: 2 }
      script: [slow(1s, "too late"), slow(10ms, "just in time")]
    }

    slowpoke("Hurry up")
    """),
    md("""
    ## `choice` and `fallback`

    Often you want one of a few words — a queue, a verdict, a next step. `choice:` on
    the call makes the output an enumeration (and the result's type the union of those
    literals); an answer outside it is repaired like any invalid output. With
    `fallback:`, exhausted repairs return the fallback instead of failing: the right
    default for routing, where "other" is a safe answer.

    A `when("substring", reply)` script entry answers every attempt of a call whose
    prompt contains the substring.
    """),
    code("""
    agent dispatcher {
      model: "scripted"
      script: [when("charged", "billing"), when("password", "tech"), when("weird", "no idea, sorry")]
    }

    let queues = ["billing", "tech", "other"]
    [
      dispatcher("Route: I was charged twice", choice: queues),
      dispatcher("Route: I forgot my password", choice: queues),
      dispatcher("Route: something weird happened", choice: queues, fallback: "other"),
    ]
    """),
    md("""
    ## The `mock` model

    A `scripted` agent needs its answers written out. `model: "mock"` needs nothing: it
    makes up a schema-valid answer, seeded by the agent's name and the prompt, so the
    same call gives the same answer on every run. It is the quickest way to try a
    pipeline's plumbing before any real model is involved.
    """),
    code("""
    agent guesser {
      model: "mock"
      output: Verdict
    }

    let first_guess = guesser("Is 'hello, old friend' spam?")
    let second_guess = guesser("Is 'hello, old friend' spam?")
    {same: first_guess == second_guess, valid: first_guess.confidence <= 1}
    """),
    md("""
    ## An uncaught failure

    Finally, what happens when nobody catches: the run fails, the cell's output shows
    the error's code and the Flow line it came from, and the run view marks the failed
    card. This cell fails on purpose.
    """),
    code("""
    agent offline {
      model: "scripted"
      script: [fail("agent-invocation", "the provider is unreachable")]
    }

    let reply = offline("Is anyone there?")
    """, RAISES),
    md("""
    ## What next

    One agent at a time is slow. [4 · Parallel work, pipelines and stages](04-parallel-pipelines-stages.ipynb)
    runs calls side by side, organises a workflow into observable stages, and publishes
    a report at the end.
    """),
]
