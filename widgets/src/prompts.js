// The boxes of prompts a person answers while a cell runs (flow_kernel/views/prompts.py:
// Approve / Deny, an `ask`'s choices, a text box, the capability prompt), once their kernel
// is gone (Kernel ▸ Restart, a crash): a click would reach no kernel, so nothing may offer a
// decision any more. The one place that takes them away, for the run view (index.js) and
// for a box of prompts shown on its own (guard.js).

export const PROMPTS = "flow-prompts"; // the class of every box of prompts (views/prompts.py `PROMPTS_CLASS`)

// Take the prompts' controls out of the page: `box` is the element holding the prompts (the
// widget's parent); each box of prompts in it is hidden and its controls disabled. Returns
// how many boxes it closed.
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
