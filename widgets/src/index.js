// The run view's front end, loaded by anywidget (JupyterLab, Notebook 7, VS Code): the host
// sends compact events in batches (flow_kernel/views/run_stream.py), this folds them into the
// state (reducer.js) and draws what is on screen (render.js) at most every FRAME ms; the clock
// ticks on its own. Clicks open cards (their full text is asked of the host), page through a
// parallelMap's items and filter.

import { applyMessage, emptyState } from "./reducer.js";
import { elapsed, emptyClock, heard, stop } from "./clock.js";
import { duration } from "./format.js";
import { emptyUi, renderRun } from "./render.js";
import { kernelGone } from "./gone.js";
import { closePrompts } from "./prompts.js";

const FRAME = 100; // ms: at most ten redraws a second, whatever the run's rate of events
const TICK = 250; // ms: the clock

function render({ model, el }) {
  const state = emptyState();
  const ui = emptyUi();
  const root = document.createElement("div");
  root.className = "flow-run-view";
  el.appendChild(root);
  const clock = emptyClock();
  let due = null;

  const draw = () => {
    due = null;
    root.innerHTML = renderRun(state, ui, model.get("title"), elapsed(clock, performance.now()));
    // A card's streamed text shows its newest lines: each redraw scrolls it to its end.
    for (const written of root.querySelectorAll(".fr-stream")) written.scrollTop = written.scrollHeight;
  };
  const schedule = () => {
    if (due === null) due = setTimeout(draw, FRAME);
  };
  const onMessage = (msg) => {
    applyMessage(state, msg);
    heard(clock, state, msg, performance.now());
    if (state.gap) { // a batch past what this view has: ask for the rest
      state.gap = false;
      model.send({ t: "hello", have: state.n });
    }
    schedule();
  };
  model.on("msg:custom", onMessage);
  // The widget manager marks the model's comm dead when the kernel restarts or dies (a front
  // end drops what the dying kernel still sends): a run that had not ended was interrupted,
  // and the view says so, with what goes on with it.
  // Its prompts' buttons would answer nobody: they are taken away (prompts.js).
  const onGone = () => {
    if (clock.total !== null) return;
    kernelGone(state, model.get("run"), stop(clock, performance.now()));
    closePrompts(el.parentElement);
    schedule();
  };
  model.on("comm_live_update", onGone);

  const ticking = setInterval(() => {
    if (clock.total !== null) return;
    const shown = root.querySelector(".fr-clock");
    if (shown) shown.textContent = duration(elapsed(clock, performance.now()));
  }, TICK);

  root.addEventListener("click", (ev) => {
    const target = ev.target instanceof Element ? ev.target.closest("[data-act]") : null;
    if (!target) return;
    const act = target.getAttribute("data-act");
    if (act === "card") {
      const id = target.getAttribute("data-id");
      if (ui.open.has(id)) ui.open.delete(id);
      else {
        ui.open.add(id);
        if (!state.details.has(id)) model.send({ t: "detail", i: id });
      }
      draw();
    } else if (act === "page") {
      ui.pages.set(target.getAttribute("data-group"), Number(target.getAttribute("data-to")) || 0);
      draw();
    }
  });
  root.addEventListener("change", (ev) => {
    const target = ev.target;
    const act = target && target.getAttribute && target.getAttribute("data-act");
    if (act === "failed") ui.filter.failed = Boolean(target.checked);
    else if (act === "agent" || act === "stage") ui.filter[act] = String(target.value);
    else return;
    ui.pages.clear();
    draw();
  });
  // A JSON fold stays as the reader left it across redraws (toggle does not bubble: capture it).
  root.addEventListener("toggle", (ev) => {
    const fold = ev.target instanceof Element ? ev.target.getAttribute("data-fold") : null;
    if (fold === null) return;
    if (ev.target.open) ui.open.add(fold);
    else ui.open.delete(fold);
  }, true);

  model.send({ t: "hello", have: 0 }); // what was sent before this view existed
  draw();
  return () => {
    clearInterval(ticking);
    clearTimeout(due);
    model.off("msg:custom", onMessage);
    model.off("comm_live_update", onGone);
  };
}

export default { render };
