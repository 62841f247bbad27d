"""Lesson 12 · Ask a panel."""

from __future__ import annotations

from lessons import RAISES, code, md

NAME = "12-ask-a-panel"

CELLS = [
    md("""
    # 12 · Ask a panel

    Some questions are judgement calls: is this essay good, is this plan safe, which of
    two designs is better? One model asked once gives one opinion, with whatever blind
    spots it has. Flow can convene a **panel** instead: experts that each judge from
    their own domain, against a shared **rubric**, over one or more rounds, until they
    agree well enough — and a judge who writes up what they found.

    **What you will learn**

    - `rubric`: criteria with a description, a weight and a scale — the description
      may live in a Markdown file, `file("prompts/accuracy.md")`;
    - `panel`: experts with their domains, the rubric, a judge, `rounds` and
      `converge: { spread: … }`;
    - the record a panel returns: its status, the rounds with every verdict, and the
      weighted aggregate, computed by plain deterministic code you can check by hand;
    - a verdict that names a criterion the rubric does not have is repaired, not trusted;
    - a panel that runs out of budget stops with what it has; models chosen by purpose.
    """),
    md("""
    ## A rubric

    A rubric lists what the experts score. Each criterion has an `id` (the key of the
    scores), a `description` the experts read, a `weight` in the aggregate and a
    `scale` (`5` means whole scores from 1 to 5). The first description is long, so it
    is kept in `prompts/accuracy.md` beside this notebook and versioned with it;
    `file("…")` reads it when the cell is checked (a missing file is F2011, naming it).
    """),
    code("""
    rubric essay {
      criteria: [
        { id: "accuracy", description: file("prompts/accuracy.md"), weight: 3, scale: 5 },
        { id: "clarity", description: "A reader new to the period can follow it", weight: 2, scale: 5 },
        { id: "sources", description: "Claims point to sources a reader can find", weight: 1, scale: 5 },
      ]
    }
    """),
    md("""
    ## Three experts and a judge

    Scripted agents stand in for real models, so the lesson runs the same every time.
    Each expert answers per round: its prompt says `Round 1 of 3` or `Round 2 of 3`,
    and `when("…", reply)` picks the answer. A real model would see the rubric in its
    prompt, the candidate as context, and from the second round on the verdicts of the
    round before.
    """),
    code("""
    agent historian {
      model: "scripted"
      script: [
        when("Round 1 of", { scores: { accuracy: 2, clarity: 4, sources: 3 },
                             rationale: "The battle was in 1066, not 1067." }),
        when("Round 2 of", { scores: { accuracy: 3, clarity: 4, sources: 3 },
                             rationale: "Only the one date is wrong; the rest holds." }),
      ]
    }
    agent editor {
      model: "scripted"
      script: [
        when("Round 1 of", { scores: { accuracy: 4, clarity: 4, sources: 3 }, rationale: "Reads well." }),
        when("Round 2 of", { scores: { accuracy: 3, clarity: 4, sources: 3 },
                             rationale: "I missed the date; lowering accuracy." }),
      ]
    }
    agent librarian {
      model: "scripted"
      script: [
        when("Round 1 of", { scores: { accuracy: 3, clarity: 3, sources: 2 }, rationale: "No primary sources." }),
        when("Round 2 of", { scores: { accuracy: 3, clarity: 3, sources: 3 },
                             rationale: "The chronicle it names is findable." }),
      ]
    }
    agent chair {
      model: "scripted"
      script: ["The essay is readable but dates the battle to 1067; the experts agree on a middling score. Fix the date and cite a primary source."]
    }
    """),
    md("""
    ## The panel

    `converge: { spread: 1 }` means: stop when, on every criterion, the experts' highest
    and lowest scores differ by at most 1. `rounds: 3` is the most it may take.
    """),
    code("""
    panel review {
      experts: [
        { agent: historian, domain: "medieval history" },
        { agent: editor, domain: "plain writing" },
        { agent: librarian, domain: "sources and citations" },
      ]
      rubric: essay
      judge: chair
      rounds: 3
      converge: { spread: 1 }
    }
    """),
    md("""
    Calling the panel on a candidate runs the rounds. The run view below the cell shows
    each round as a table — experts down, criteria across — with the means, the
    aggregate and the spread. In round 1 the experts disagree by 2 on accuracy, so there
    is a second round, in which they agree within 1.
    """),
    code("""
    let verdict = review("The Battle of Hastings was fought in 1067 between ...", label: "hastings")
    print "${verdict.status} after ${len(verdict.rounds)} rounds; aggregate ${verdict.aggregate}"
    verdict.synthesis
    """),
    md("""
    ## The aggregate, by hand

    After each round the sandbox computes, with ordinary deterministic code (no model
    involved), the mean of each criterion, puts it on 0..1 by its scale — (mean − 1) / 4
    for a 1-to-5 scale — and weighs them. For round 2:

    - accuracy: mean 3 → 0.5, weight 3
    - clarity: mean 11/3 ≈ 3.667 → 0.6667, weight 2
    - sources: mean 3 → 0.5, weight 1

    (3 × 0.5 + 2 × 0.6667 + 1 × 0.5) / 6 = 3.3333 / 6 = 0.5556. Round 1's is 0.5417.
    """),
    code("""
    verify verdict.aggregate == 0.5556 : "round 2's aggregate, as computed by hand"
    verify verdict.rounds[0].aggregate == 0.5417 : "round 1's"
    verdict.rounds[1].scores
    """),
    md("""
    ## A verdict the rubric does not allow

    Each expert's answer has a contract made from the rubric: one score for every
    criterion, within its scale, and nothing else. This expert first scores a `style`
    the rubric does not have and forgets `sources`; that is invalid output, so it goes
    back to the model with the errors (a *repair*), like any agent's invalid answer.
    """),
    code("""
    agent hasty {
      model: "scripted"
      script: [
        { scores: { accuracy: 3, clarity: 4, style: 5 }, rationale: "Nice style." },
        { scores: { accuracy: 3, clarity: 4, sources: 3 }, rationale: "Scored on the rubric this time." },
      ]
    }
    panel second_opinion {
      experts: [{ agent: hasty, domain: "general reading" }, { agent: librarian, domain: "sources" }]
      rubric: essay
      converge: { spread: 1 }
    }
    let second = second_opinion("The Battle of Hastings was fought in 1067 between ...")
    second.rounds[0].verdicts[0].scores
    """),
    md("""
    The run view's card for `hasty` lists both tries: the first with the validation
    errors it was sent back (`style` is not allowed, `sources` is missing), the second
    accepted.

    ## When the budget runs out

    A panel spends agent calls: experts × rounds, plus the judge. The workflow's
    `agent_runs` limit bounds it. Here 4 runs allow round 1 (three calls) and one
    verdict of round 2: the panel stops with status `budget-exhausted` and everything
    it gathered — round 2 is kept, marked incomplete, and the aggregate is round 1's.
    The run itself does not fail.
    """),
    code("""
    limits { agent_runs: 4 }
    let cut = review("The Battle of Hastings was fought in 1067 between ...")
    { status: cut.status, aggregate: cut.aggregate, round_two_complete: cut.rounds[1].complete }
    """),
    md("""
    ## Models chosen by purpose

    A real panel's judge needs a strong model; its experts may not. Instead of naming
    models in the program, ask for one by purpose: `model: "for:deep-judgement"` (or
    `structured-authoring`, `high-volume-mechanical`, `long-context-analysis`,
    `visual-judgement`), and say in `flow.toml` which model serves it:

    ```toml
    [models]
    deep-judgement = "anthropic/claude-sonnet-4-5"
    ```

    Nothing is guessed. This folder's `flow.toml` sets no `[models]`, so the call fails
    closed, and the message names the key to set (in a `.flow` file, `flow check` says
    so before anything runs: F4026).
    """),
    code("""
    agent senior_judge { model: "for:deep-judgement" }
    senior_judge("Is this essay ready to publish?")
    """, RAISES),
    md("""
    ## What you learned

    - A `rubric` holds the criteria (id, description, weight, scale); descriptions and
      agents' instructions can live in files with `file("…")`.
    - A `panel` asks its experts round after round until their scores agree within
      `converge: { spread }`, then its judge writes the synthesis.
    - The record gives the status (`converged`, `not-converged`, `budget-exhausted`,
      `failed`), every verdict, and an aggregate computed by deterministic code.
    - Invalid verdicts are repaired; an exhausted budget ends the panel, not the run.
    - `model: "for:<purpose>"` picks the model from `[models]` in `flow.toml`, failing
      closed when nothing is set.
    """),
]
