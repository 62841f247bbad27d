"""Lesson 4 · Parallel work, pipelines and stages."""

from __future__ import annotations

from lessons import code, md

NAME = "04-parallel-pipelines-stages"

CELLS = [
    md("""
    # 4 · Parallel work, pipelines and stages

    Agent calls are slow — seconds each — and most of a real workflow's calls do not
    depend on one another. This lesson runs them side by side, then gives a longer
    workflow a visible structure: named stages you can watch, progress, a log, checks
    that record or stop, and a report at the end.

    **What you will learn**

    - `parallel { … }`: a few different calls at once, as one object;
    - `parallelMap(xs, x => …, concurrency: n)`: the same call over many items, in order;
    - `limits { … }`: the budgets a workflow runs under;
    - `pipeline` and `stage`: named, observed steps;
    - `emit progress`, `log`, `verify` (records, goes on) and `require` (stops);
    - `publish`: an artifact — here a Markdown report — shown in the notebook;
    - `async` / `await` for a task that runs while the workflow goes on.
    """),
    md("""
    ## The agents

    Three scripted agents, answering from `when` patterns so that each review gets the
    same answer whichever order the calls happen in — parallel calls start in order but
    may finish in any order.
    """),
    code("""
    type Sentiment = { review: string, mood: "happy" | "neutral" | "unhappy", topic: string }

    agent rater {
      model: "scripted"
      instructions: "Rate the mood of a product review and name its topic in one word."
      output: Sentiment
      script: [
        when("fast", { review: "R1", mood: "happy", topic: "delivery" }),
        when("broke", { review: "R2", mood: "unhappy", topic: "quality" }),
        when("fine", { review: "R3", mood: "neutral", topic: "price" }),
        when("love", { review: "R4", mood: "happy", topic: "design" }),
        when("late", { review: "R5", mood: "unhappy", topic: "delivery" }),
      ]
    }

    agent headliner {
      model: "scripted"
      script: ["Customers love the design, delivery is hit and miss"]
    }

    agent advisor {
      model: "scripted"
      script: ["Talk to the courier about late deliveries."]
    }

    let reviews = [
      { id: "R1", text: "Arrived fast, works great" },
      { id: "R2", text: "It broke after two days" },
      { id: "R3", text: "It is fine for the price" },
      { id: "R4", text: "I love the colour and the shape" },
      { id: "R5", text: "Came a week late" },
    ]
    """),
    md("""
    ## `parallelMap`: one call per item

    `parallelMap` runs the lambda for every item, at most `concurrency` at a time, and
    returns the results **in input order** — whatever order the calls finish in. If one
    call fails, the ones still running are cancelled: the result is all or nothing.
    """),
    code("""
    let rated = parallelMap(reviews, r => rater("Review ${r.id}: ${r.text}"), concurrency: 3)
    rated[*].mood
    """),
    md("""
    ## `parallel`: different calls at once

    `parallel` takes named branches and gives back an object with one field per branch,
    each with its own type. Here the headline and the advice do not depend on each
    other, so there is no reason to wait for one before asking for the other.
    """),
    code("""
    let unhappy = filter(rated, r => r.mood == "unhappy")
    let extras = parallel {
      headline: headliner("Write a headline for ${len(rated)} reviews")
      advice: advisor("Advise on these complaints: ${json(unhappy[*].topic)}")
    }
    extras
    """),
    md("""
    ## A workflow with stages

    Now the same work as a workflow someone else can watch. `limits` comes first and
    caps what the workflow may spend: agent calls (attempts included), wall time,
    calls in flight, executed steps. A `pipeline` groups `stage`s; each stage appears in
    the run view with its state, so when something fails you see *where*. Stages do not
    open a scope: `rated` made in the first stage is visible in the next.

    Inside, four ways to report:

    - `emit progress {done, total, message}` — a progress bar for the current stage;
    - `log` — a line in the run's log;
    - `verify cond : "message"` — records whether a check passed, and goes on;
    - `require cond : "message"` — stops the run with an `assertion` error if false.

    And `publish NAME value` makes an artifact: a string is shown as Markdown, a value
    as JSON.
    """),
    code('''
    type Review = { id: string, text: string }

    ## Rate reviews, check the ratings, and publish a Markdown report.
    workflow review_report(reviews: Review[]) -> { happy: int, unhappy: int } {
      limits { agent_runs: 20, duration: 1m, concurrency: 2 }
      pipeline "reviews" {
        stage "rate" {
          let rated = parallelMap(reviews, r => rater("Review ${r.id}: ${r.text}")
                                    expect it.review == r.id : "echo the review id", concurrency: 4)
          emit progress { done: len(rated), total: len(reviews), message: "reviews rated" }
          log "rated ${len(rated)} reviews"
        }
        stage "check" {
          require len(rated) == len(reviews) : "one rating per review"
          verify all(rated, r => r.topic != "") : "every rating names a topic"
          verify count(rated, r => r.mood == "unhappy") <= 1 : "at most one unhappy review"
        }
        stage "write" {
          let extras = parallel {
            headline: headliner("Write a headline for ${len(rated)} reviews")
            advice: advisor("Advise on the unhappy reviews")
          }
          let lines = map(rated, r => "| ${r.review} | ${r.mood} | ${r.topic} |")
          publish "report.md" """
            # ${extras.headline}

            | review | mood | topic |
            |---|---|---|
            ${join(lines, "\\n")}

            **Advice:** ${extras.advice}
            """
        }
      }
      return {
        happy: count(rated, r => r.mood == "happy"),
        unhappy: count(rated, r => r.mood == "unhappy"),
      }
    }
    '''),
    md("""
    Run it. The summary shows the tree — pipeline, stages, agent calls — with the
    progress, the log line, both `verify` results (one failed, and the run went on) and
    the published report, which also appears as an output of its own.
    """),
    code("""
    review_report(reviews)
    """),
    md("""
    Notice `concurrency: 4` on the `parallelMap`: the workflow's `limits` say 2, and the
    workflow's limit wins, so at most two reviews were rated at a time.

    ## When a `require` fails

    `verify` is for things worth knowing; `require` is for things the rest of the
    workflow cannot do without. A failed `require` stops the run with an `assertion`
    error — which, like any error with a code, can be caught:
    """),
    code("""
    var outcome = "not run"
    try {
      stage "gate" {
        require len(unhappy) == 0 : "no unhappy reviews before the launch"
        outcome = "ship it"
      }
    } catch "assertion" as err {
      outcome = "blocked: ${err.message}"
    }
    outcome
    """),
    md("""
    ## `async` and `await`

    `parallel` waits for all its branches at once. Sometimes you want to start something
    slow, do other work, and collect it later: `async name { … }` starts a task and goes
    on; `await name` waits for it, and the task's top-level bindings become fields of
    its name.
    """),
    code("""
    async headline_task { let headline = headliner("A headline, please") }
    let tally = groupBy(rated, r => r.mood)
    await headline_task
    {headline: headline_task.headline, moods: map(tally, g => "${g.key}: ${len(g.items)}")}
    """),
    md("""
    ## What next

    So far every agent has worked alone. [5 · Teams and routing](05-teams-and-routing.ipynb)
    groups agents into a team and lets a call decide, at run time, which member answers.
    """),
]
