// Text for the run view: escaping (every string from a run is data), durations, and a JSON
// value as a collapsible tree that says what is folded ("{2 keys}", "[3 items]").

const ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

export function esc(value) {
  return String(value ?? "").replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

export function duration(ms) {
  if (typeof ms !== "number" || !Number.isFinite(ms) || ms < 0) return "";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  const m = Math.floor(ms / 60000);
  return `${m} min ${Math.round((ms % 60000) / 1000)} s`;
}

export function plural(n, one, many) {
  return `${n} ${n === 1 ? one : many || one + "s"}`;
}

export function folded(value) {
  if (Array.isArray(value)) return `[${plural(value.length, "item")}]`;
  return `{${plural(Object.keys(value).length, "key")}}`;
}

// `key` names each fold (data-fold) so the view can keep it open across re-renders; the
// top level is open, deeper levels folded unless `open` has them.
export function jsonTree(value, key, open, depth = 0) {
  if (value !== null && typeof value === "object" && Object.keys(value).length > 0) {
    const entries = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
    const rows = entries.map(([k, v]) =>
      `<li><span class="fr-key">${esc(k)}</span>: ${jsonTree(v, `${key}.${k}`, open, depth + 1)}</li>`).join("");
    const isOpen = depth === 0 || open.has(`${key}`);
    return `<details class="fr-json" data-fold="${esc(key)}"${isOpen ? " open" : ""}>` +
      `<summary>${esc(folded(value))}</summary><ul>${rows}</ul></details>`;
  }
  return `<code>${esc(JSON.stringify(value))}</code>`;
}
