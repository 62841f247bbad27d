// The kernel went away before the run ended (Kernel ▸ Restart, a crash): the widget manager
// marks the model's comm dead and drops what the dying kernel still sends. The run is
// journaled interrupted; an approval it was waiting for has no answer in its journal, so the
// resumed run asks it again (in the cell that runs `%resume`): the view says so, and the
// prompt's buttons, whose clicks would now go nowhere, are taken away.

import { applyMessage } from "./reducer.js";

export const PROMPTS = "flow-prompts"; // the class of the run view's box of prompts (views/prompts.py)

// Fold the kernel's going into the state: the run ends interrupted at `ms`, its open
// approvals left for the resumed run. Returns false when the run had already ended.
export function kernelGone(state, run, ms) {
  if (state.gone || state.status !== "running") return false;
  const open = state.approvals.filter((a) => a.pending);
  applyMessage(state, { t: "end", s: "interrupted", ms });
  for (const a of open) { // not cancelled: nobody answered, and the resumed run asks again
    a.error = "";
    a.resume = true;
  }
  state.gone = run || "RUN";
  return true;
}

// Take the prompts' controls out of the page: `box` is the element holding the view and its
// prompts (the widget's parent); each prompt box in it is hidden and its controls disabled,
// so nothing offers a decision that goes nowhere. Returns how many prompt boxes it closed.
export function closePrompts(box) {
  if (!box || typeof box.querySelectorAll !== "function") return 0;
  const found = box.querySelectorAll(`.${PROMPTS}`);
  for (const prompts of found) {
    for (const control of prompts.querySelectorAll("button, input, select, textarea")) control.disabled = true;
    prompts.hidden = true;
    prompts.style.display = "none";
  }
  return found.length;
}
