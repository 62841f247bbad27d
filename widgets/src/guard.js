// The guard of a box of prompts shown on its own (the capability prompt a cell's magics
// raise, a resumed run's open requests: views/prompts.py `Prompts.mimebundle`), loaded by
// anywidget beside the box. It shows nothing while the kernel is there; when the widget
// manager marks its comm dead (Kernel ▸ Restart, a crash), the box's controls are taken
// away (prompts.js) and it says why, in their place.

import { closePrompts } from "./prompts.js";

// What it says in the prompts' place.
export const PROMPTS_GONE = "The kernel went away (restarted or stopped) before this prompt was answered: " +
  "its buttons would reach no one, so they are gone. Run the cell again to be asked again.";

// Returns whether the prompts were closed now (false once done, or with no box beside it).
export function guardGone(el) {
  if (el.textContent) return false;
  if (closePrompts(el.parentElement) === 0) return false;
  el.textContent = PROMPTS_GONE;
  return true;
}

function render({ model, el }) {
  const onGone = () => guardGone(el);
  model.on("comm_live_update", onGone);
  return () => model.off("comm_live_update", onGone);
}

export default { render };
