// The kernel went away before the run ended (Kernel ▸ Restart, a crash): the widget manager
// marks the model's comm dead and drops what the dying kernel still sends. The run is
// journaled interrupted; an approval it was waiting for has no answer in its journal, so the
// resumed run asks it again (in the cell that runs `%resume`): the view says so (the
// prompt's buttons, whose clicks would now go nowhere, are taken away by prompts.js).

import { applyMessage } from "./reducer.js";

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
