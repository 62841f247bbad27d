"""Lesson 5 · Teams and routing."""

from __future__ import annotations

from lessons import RAISES, code, md

NAME = "05-teams-and-routing"

CELLS = [
    md("""
    # 5 · Teams and routing

    A single agent asked to do everything gets a long, vague prompt. It works better to
    give each agent one job — billing questions, technical questions, the polite front
    desk — and to decide *per request* who answers. A `team` groups such agents under one
    name; routing picks a member at run time, and the team makes sure only its members
    can be picked.

    **What you will learn**

    - `team Name { main: …, members: […] }`, and calling `team.main` and `team.member_name`;
    - `team.member(name, prompt)`: choosing the member at run time;
    - routing with a `choice` call, with a `fallback` for requests nobody recognises;
    - what happens when the name is not a member: a `capability-violation` error, caught.
    """),
    md("""
    ## A support team

    Three scripted agents, each with one job, and a team. `main` is the agent the team
    answers with by default; `members` are the specialists. (The main agent counts as a
    member too, when routing by name.)
    """),
    code("""
    agent frontdesk {
      model: "scripted"
      role: "front desk of a support team"
      instructions: "Answer general questions politely; hand anything specific to a specialist."
      script: ["Thanks for writing! A specialist will look at this shortly."]
    }

    agent billing {
      model: "scripted"
      role: "billing specialist"
      instructions: "Answer questions about invoices, charges and refunds."
      script: [when("twice", "I have refunded the duplicate charge; expect it within 5 days."),
               "Your invoices are under Account → Billing."]
    }

    agent tech {
      model: "scripted"
      role: "technical support engineer"
      instructions: "Diagnose login and app problems step by step."
      script: ["Please reset your password from the login page, then clear the app's cache."]
    }

    team support { main: frontdesk, members: [billing, tech] }
    """),
    md("""
    Calling the team: `support.main(…)` is the main agent, `support.billing(…)` a member
    by its name. The names are checked before the run, like any other call.
    """),
    code("""
    [support.main("Hello?"), support.billing("Where are my invoices?")]
    """),
    md("""
    A member the team does not have is a compile error: nothing runs. (This cell fails
    on purpose.)
    """),
    code("""
    support.legal("Can I sue you?")
    """, RAISES),
    md("""
    ## Routing at run time

    Usually you do not know in advance who should answer — that depends on the message.
    `support.member(name, prompt)` takes the member's name as a *value*. Here a router
    agent picks it. Its call uses `choice`, so the answer can only be one of the names
    we list, and `fallback: "frontdesk"` handles messages it cannot place: a router
    that is unsure should send the request to the front desk, not fail.

    The routing lives in a workflow, so each message is handled the same way, and
    `parallelMap` handles several messages at once.
    """),
    code("""
    agent router {
      model: "scripted"
      instructions: "Name the specialist who should answer the message."
      script: [when("charged", "billing"), when("password", "tech"), when("log in", "tech"),
               when("weather", "I'm not sure")]
    }

    ## Route a message to the right member of `support`, and answer it.
    workflow handle(message: string) -> { routed_to: string, reply: string } {
      let who = router("Who should answer: ${message}", choice: ["frontdesk", "billing", "tech"],
                       fallback: "frontdesk")
      return { routed_to: who, reply: support.member(who, message) }
    }
    """),
    code("""
    let inbox = [
      "I was charged twice this month",
      "I forgot my password",
      "What's the weather like over there?",
    ]
    parallelMap(inbox, m => handle(m))
    """),
    md("""
    Open the run view's cards: the third router call answered outside the choice, was
    asked to repair, failed again and fell back to `frontdesk` — the request still got
    an answer.

    ## Only members may answer

    `choice` is what made that routing safe. Without it, the router's answer is any
    string — and a team must not let a string decide to call an agent outside it. A name
    that is neither `main` nor a member fails the call with `capability-violation`. Here
    a router without a `choice` comes up with "legal"; we catch the error and answer
    from the front desk instead.
    """),
    code("""
    agent loose_router {
      model: "scripted"
      script: ["legal"]
    }

    let message = "I want to cancel my contract and speak to a lawyer"
    let who = loose_router("Who should answer: ${message}")
    var reply = ""
    try {
      reply = support.member(who, message)
    } catch "capability-violation" as err {
      print "refused: ${err.message}"
      reply = support.main(message)
    }
    reply
    """),
    md("""
    ## What next

    Some decisions should not be left to any agent. [6 · Approvals and questions](06-approvals-and-questions.ipynb)
    stops a workflow to ask a person — and shows how a notebook that must run unattended
    answers anyway.
    """),
]
