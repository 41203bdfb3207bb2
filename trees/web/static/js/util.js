// Small shared helpers: colours, formatting, DOM bits (toast, banner, tooltip).

/** Node status colours (Groot2's conventions). */
/** One display frame [ms]: what a browser waits between animation frames at 60 Hz. */
export const FRAME_MS = 1000 / 60;

export const STATUS_COLOURS = {
  RUNNING: "#f0a030",
  SUCCESS: "#3cb44b",
  FAILURE: "#e6194b",
  IDLE: "#c8c8c8",
};

/** Timeline mark colour per event kind; kinds not listed are not marked. */
export const EVENT_COLOURS = {
  fault_injected: "#e6194b",
  fault_ended: "#8c8c8c",
  fault_recovered: "#3cb44b",
  fault_refused: "#b9a0a6",
  fault_deferred: "#b9a0a6",
  fault_skipped: "#b9a0a6",
  paused: "#2f6fd6",
  resumed: "#2f6fd6",
  breakpoint: "#2f6fd6",
  gate: "#8e44ad",
  gate_answered: "#8e44ad",
  aborted: "#111111",
  time_limit: "#111111",
  agent_error: "#111111",
  sink_failed: "#111111",
  link: "#f07820",
  link_restored: "#f0a860",
  agent_restarted: "#f07820",
  limb_refused: "#f07820",
};

/** Which lane (row) of the timeline strip an event kind is drawn in. */
export function eventLane(kind) {
  if (kind.startsWith("fault_")) return 0;
  if (kind.startsWith("link") || kind === "agent_restarted" || kind === "limb_refused") return 2;
  return 1;
}

/** Distinct colours for the limbs (3D view and the limbs table's swatches). */
export const LIMB_COLOURS = [
  "#1f77b4", "#9467bd", "#17becf", "#8c564b", "#e377c2", "#bcbd22", "#7f7f7f", "#2ca02c",
  "#d62728", "#ff7f0e",
];

/** Seconds shown with a sensible unit (µs, ms, s). */
export function formatDuration(seconds) {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return "–";
  const abs = Math.abs(seconds);
  if (abs < 1e-3) return `${(seconds * 1e6).toFixed(abs < 1e-5 ? 1 : 0)} µs`;
  if (abs < 1) return `${(seconds * 1e3).toFixed(abs < 1e-2 ? 2 : 1)} ms`;
  return `${seconds.toFixed(2)} s`;
}

export function formatNumber(value, digits = 3) {
  if (value === null || value === undefined) return "–";
  if (typeof value !== "number") return String(value);
  if (Number.isInteger(value)) return String(value);
  const abs = Math.abs(value);
  if (abs !== 0 && (abs < 1e-3 || abs >= 1e5)) return value.toExponential(2);
  return String(Number(value.toPrecision(digits + 1)));
}

/** Create an element: el("div", {class: "x", text: "hi"}, child...). */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "text") node.textContent = value;
    else if (key === "class") node.className = value;
    else if (key === "style") node.style.cssText = value;
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children) if (child !== null && child !== undefined) node.append(child);
  return node;
}

/** Show a short-lived message in the corner; kind "error" or "info". */
export function toast(message, kind = "error") {
  const box = document.getElementById("toasts");
  const item = el("div", { class: `toast ${kind}`, role: "status", text: message });
  box.append(item);
  setTimeout(() => item.classList.add("leaving"), 4200);
  setTimeout(() => item.remove(), 4700);
}

/** The banner under the top bar; kind: "info", "pause", "SUCCESS", "FAILURE", "ABORTED". */
export function showBanner(text, kind = "info") {
  const banner = document.getElementById("banner");
  document.getElementById("banner-text").textContent = text;
  banner.dataset.kind = kind;
  banner.hidden = false;
}

export function hideBanner(kind = null) {
  const banner = document.getElementById("banner");
  if (kind === null || banner.dataset.kind === kind) banner.hidden = true;
}

const tooltipBox = () => document.getElementById("tooltip");

/** Show the floating tooltip near the pointer; `lines` are text lines. */
export function showTooltip(event, lines) {
  const tip = tooltipBox();
  // A tooltip shown again as it is (a node's under a still pointer, at each live frame,
  // in a window of the same size) is left alone: placing it reads its size, which lays the
  // page out again.
  const key = `${event.clientX},${event.clientY},${innerWidth}x${innerHeight}\n${lines.join("\n")}`;
  if (!tip.hidden && tip.dataset.key === key) return;
  tip.dataset.key = key;
  tip.replaceChildren(...lines.map((line, i) => el("div", { class: i === 0 ? "tip-head" : "", text: line })));
  tip.hidden = false;
  const pad = 12;
  const { innerWidth: w, innerHeight: h } = window;
  const rect = tip.getBoundingClientRect();
  let x = event.clientX + pad;
  let y = event.clientY - rect.height - pad;
  if (x + rect.width > w - 4) x = event.clientX - rect.width - pad;
  if (y < 4) y = event.clientY + pad;
  if (y + rect.height > h - 4) y = h - rect.height - 4;
  tip.style.left = `${Math.max(4, x)}px`;
  tip.style.top = `${Math.max(4, y)}px`;
}

export function hideTooltip() {
  tooltipBox().hidden = true;
}

/** Compact JSON of a parameter value. */
export function compactJSON(value) {
  try {
    return JSON.stringify(value);
  } catch {
    return String(value);
  }
}
