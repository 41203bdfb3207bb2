// The node panel: what one node is, did and measured (GET /api/node/{id}).

import { getNode } from "./api.js";
import {
  STATUS_COLOURS, el, formatDuration, formatNumber, compactJSON, showTooltip, hideTooltip,
} from "./util.js";

const d3 = window.d3;

/** Series worth plotting first (web_api.md), then the others alphabetically. */
const PREFERRED = ["distance", "dd_mm", "dtheta_deg", "radius", "V", "segment", "t"];
/** A skill's modes, coloured as limbtree report's skills.png colours them (report/figures.py
 * _MODE_COLOURS; a test keeps the two equal): none of them a status colour, so a mode is
 * never read as the tree's RUNNING, SUCCESS or FAILURE. */
const MODE_COLOURS = {
  nominal: "#4e79a7",
  recovering: "#b07aa1",
  waiting: "#76b7b2",
  stale: "#9c755f",
  done: "#595959",
};
/** Values that are a status (an align's outcome, ...) take the tree's status colours. */
const STATUS_LABELS = {
  SUCCESS: "SUCCESS", SUCCEEDED: "SUCCESS", FAILURE: "FAILURE", FAILED: "FAILURE",
  RUNNING: "RUNNING", IDLE: "IDLE", INVALID: "IDLE",
};
/** Other values: none red, green or orange (the status colours); each value keeps its own
 * (picked from its text, not from the values that came before it). */
const LABEL_COLOURS = ["#1f77b4", "#9467bd", "#17becf", "#e377c2", "#bcbd22", "#8c564b",
  "#aec7e8", "#c5b0d5", "#9edae5", "#c49c94", "#7f7f7f", "#dbdb8d"];
/** A number standing as a word of its own ("for 0.3 s", "t=2", "12mm"), not a digit of a
 * name ("mar.E1", "leg_2", "tile0/si"): texts differing only in such numbers are one kind. */
const NUMBER = /(?<![\w.])[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?![.\d])/gi;
const LEGEND_MAX = 8;
/** An empty text (no message at that tick): the band's background, "(none)" in its legend. */
const EMPTY_COLOUR = "#e6e8ec";
/** A live node is fetched again at most this often when frames come [ms] (each answer
 * costs the server, on cores the run may be using, some milliseconds). */
const REFRESH_MIN_MS = 1000;
const PLOT_H = 58;
const BAND_H = 16;
const MARGIN = { left: 44, right: 54 };

const $ = (id) => document.getElementById(id);

export class NodePanel {
  /**
   * @param {{live: () => boolean, control: () => boolean, onBreak: (id, on, set) => void,
   *          totalTicks: () => number, watch?: (id: string) => void,
   *          loadFailed?: (err: Error) => string | null}} hooks
   *   watch: the panel shows another node (a live run's server pushes it at the run's end);
   *   loadFailed: a request failed: the text to show in its place (null: the error's own).
   */
  constructor(hooks) {
    this.hooks = hooks;
    this.id = null;
    this.info = null;        // the last /api/node reply
    this.paramsShown = null; // the parameters drawn (their JSON)
    this.frame = null;       // the frame shown
    this.breakpoints = [];
    this.loading = false;
    this.again = false;      // a refresh was asked for while one was in flight
    this.fetchedAt = -Infinity;  // when the last refresh began [ms]
    this.soon = null;        // a refresh held back (at most one every REFRESH_MIN_MS)
    this.over = false;       // the live run ended: nothing is fetched again by itself
    this.timer = null;
    this.cursors = [];       // {line, x, label?, series?} of the telemetry plots
    $("break-start").addEventListener("click", () => this.#toggleBreak("start"));
    $("break-failure").addEventListener("click", () => this.#toggleBreak("failure"));
    $("break-recovery").addEventListener("click", () => this.#toggleBreak("recovery"));
    new ResizeObserver(() => this.#renderData()).observe($("node-panel"));
  }

  /** Show a node (data: its header NODE, drawn at once; the rest comes from the server). */
  open(id, data) {
    const changed = id !== this.id;
    this.id = id;
    $("node-empty").hidden = true;
    $("node-body").hidden = false;
    $("node-panel").dataset.panelNode = id;
    if (changed) {
      this.info = null;
      this.type = data?.type ?? "";
      $("node-name").textContent = data?.name ?? id;
      $("node-type").textContent = data?.type ?? "";
      $("node-id").textContent = id;
      // (the header's parameters are the record's SI: the node's own answer gives them as
      // the mission file writes them)
      for (const box of ["node-params", "node-history", "node-timing", "node-telemetry"]) {
        $(box).replaceChildren(el("div", { class: "muted", text: "loading…" }));
      }
      this.paramsShown = null;
      $("node-panel").scrollTop = 0;
      this.hooks.watch?.(id);
    }
    this.#renderBreakButtons();
    this.#renderFrame();
    this.refresh();
    clearInterval(this.timer);
    // While a live run goes on the node keeps changing: fetch it again, at most every
    // REFRESH_MIN_MS (the same pace as the newer frames ask: one fetch, not two), when the
    // run has ticks newer than the answer (not while it waits at a gate or is paused); not
    // once the run is over (its server stops).
    this.timer = this.over ? null : setInterval(() => {
      if (this.#fetching() && this.#behind()) this.#refreshSoon();
    }, REFRESH_MIN_MS);
  }

  async refresh() {
    if (!this.id) return;
    if (this.loading) {
      this.again = true;   // (the reply in flight may be older than what is wanted now)
      return;
    }
    const id = this.id;
    this.loading = true;
    this.again = false;
    this.fetchedAt = performance.now();
    try {
      const info = await getNode(id);
      if (id === this.id) this.take(info);
    } catch (err) {
      if (id === this.id) this.#failed(err);
    } finally {
      this.loading = false;
      if (this.again) this.refresh();
    }
  }

  /**
   * A node's /api/node answer, fetched or pushed (a live run's updates with a frame, and
   * its last update, carry the watched node's): shown unless the panel moved on or has a
   * newer one.
   */
  take(info) {
    if (!info || String(info.id) !== this.id) return;
    if (this.info && (info.tick ?? -1) < (this.info.tick ?? -1)) return;
    this.info = info;
    // The sections' widths are read before anything is written (#renderData), and the
    // parameters, which a live node's answers repeat each second, are drawn again only
    // when they change (which also keeps an opened value's <details> open).
    this.#renderData();
    const params = compactJSON(info.params ?? {});
    if (params !== this.paramsShown) {
      this.paramsShown = params;
      this.#renderParams(info.params ?? {});
    }
    this.#renderBreakButtons();
  }

  /**
   * The live run ended: its last update brought the final ticks (and the watched node's
   * answer, as the run ended). A panel still short of them asks once more (a server that
   * stays up answers; one that stopped says so: #failed).
   */
  ended() {
    this.over = true;
    clearInterval(this.timer);
    clearTimeout(this.soon);
    this.soon = null;
    if (this.id && (this.info?.tick ?? -1) < this.hooks.totalTicks() - 1) this.refresh();
  }

  /** A request failed: every section still loading says so (data already shown stays). */
  #failed(err) {
    const text = this.hooks.loadFailed?.(err) ?? `cannot load: ${err.message}`;
    if (this.info) return;
    for (const box of ["node-params", "node-history", "node-timing", "node-telemetry"]) {
      $(box).replaceChildren(el("div", { class: "muted load-error", text }));
    }
    this.paramsShown = null;
  }

  /** A new frame is shown: status, message and the cursors follow it. */
  setFrame(frame) {
    this.frame = frame;
    if (!this.id) return;
    this.#renderFrame();
    // A live frame newer than the node's answer: the counts, the history and the newest
    // feedback catch up with it (at most every REFRESH_MIN_MS).
    if (this.#fetching() && this.info && frame.tick > (this.info.tick ?? -1)) this.#refreshSoon();
  }

  /**
   * Whether a live node is fetched again by the panel itself: not while the page follows
   * the run over its socket, whose server sends the watched node with each frame (one
   * message and one screen update, not two).
   */
  #fetching() {
    return this.hooks.live() && !this.hooks.pushed?.();
  }

  /** Whether the run has a tick newer than the node's answer (or there is no answer yet). */
  #behind() {
    return !this.info || (this.info.tick ?? -1) < this.hooks.totalTicks() - 1;
  }

  #refreshSoon() {
    if (this.soon) return;
    const wait = this.fetchedAt + REFRESH_MIN_MS - performance.now();
    if (wait <= 0) {
      this.refresh();
      return;
    }
    this.soon = setTimeout(() => {
      this.soon = null;
      if (this.#fetching() && this.frame && this.frame.tick > (this.info?.tick ?? -1)) this.refresh();
    }, wait);
  }

  setBreakpoints(list) {
    this.breakpoints = list ?? [];
    if (this.id) this.#renderBreakButtons();
  }

  /** The run's control changed (e.g. ended): the breakpoint buttons follow. */
  setControl() {
    if (this.id) this.#renderBreakButtons();
  }

  // ---------------------------------------------------------------- breakpoints

  #hasBreak(on) {
    return this.breakpoints.some((b) => String(b.node) === this.id && b.on === on);
  }

  #renderBreakButtons() {
    for (const on of ["start", "failure", "recovery"]) {
      const button = $(`break-${on}`);
      button.setAttribute("aria-pressed", this.#hasBreak(on) ? "true" : "false");
      button.disabled = !this.hooks.control();
    }
    // "recovery" is for skills with a mode (sync_move, ...): shown for those only.
    $("break-recovery").hidden = !(this.#hasMode() || this.#hasBreak("recovery"));
  }

  #hasMode() {
    if (this.type === "sync_move") return true;
    return Boolean(this.info?.telemetry?.labels && "mode" in this.info.telemetry.labels);
  }

  #toggleBreak(on) {
    if (!this.id) return;
    this.hooks.onBreak(this.id, on, !this.#hasBreak(on));
  }

  // ---------------------------------------------------------------- frame-dependent bits

  #renderFrame() {
    const info = this.frame?.nodes?.[this.id];
    const status = info?.status ?? "IDLE";
    const tag = $("node-status");
    tag.textContent = status;
    tag.dataset.status = status;
    const message = info?.message || "";
    $("node-message").textContent = message ? `“${message}”` : "";
    $("node-message").hidden = !message;
    this.#moveCursors();
  }

  #moveCursors() {
    const frame = this.frame;
    if (!frame) return;
    if (this.historyCursor) {
      const x = this.historyScale(frame.tick);
      this.historyCursor.setAttribute("x1", x);
      this.historyCursor.setAttribute("x2", x);
    }
    for (const cursor of this.cursors) {
      const x = cursor.x(frame.t);
      const inside = x >= cursor.x.range()[0] - 0.5 && x <= cursor.x.range()[1] + 0.5;
      cursor.line.setAttribute("display", inside ? "inline" : "none");
      cursor.line.setAttribute("x1", x);
      cursor.line.setAttribute("x2", x);
      if (cursor.valueText) cursor.valueText.textContent = cursor.valueAt(frame.t);
    }
  }

  // ---------------------------------------------------------------- server data

  #renderData() {
    if (!this.info) return;
    // Both widths read before the sections are replaced: a read after a write lays the
    // page out again at once (a forced layout: most of a live node's redraw each second).
    const widths = [this.#width($("node-history")), this.#width($("node-telemetry"))];
    this.#renderHistory(widths[0]);
    this.#renderTiming();
    this.#renderTelemetry(widths[1]);
    this.#moveCursors();
  }

  #width(box) {
    return Math.max(200, box.clientWidth || $("node-panel").clientWidth - 24);
  }

  /** The status strip over the run's ticks, then the last status changes as text. */
  #renderHistory(width) {
    const box = $("node-history");
    const history = this.info.history ?? [];
    const total = Math.max(1, this.hooks.totalTicks(), ...history.slice(-1).map((h) => h[0] + 1));
    const x = d3.scaleLinear().domain([0, total]).range([0, width]);
    this.historyScale = x;
    // Rows come when the status or the message changes: the strip merges equal statuses.
    const runs = statusRuns(history, total);
    const svg = d3.create("svg").attr("class", "history-strip").attr("width", width).attr("height", 18);
    svg.append("rect").attr("class", "strip-bg").attr("width", width).attr("height", 14);
    svg.selectAll("rect.run").data(runs).join("rect")
      .attr("class", "run")
      .attr("x", (d) => x(d.from))
      .attr("width", (d) => Math.max(0.8, x(d.to) - x(d.from)))
      .attr("height", 14)
      .attr("fill", (d) => STATUS_COLOURS[d.status] ?? STATUS_COLOURS.IDLE);
    this.historyCursor = svg.append("line").attr("class", "cursor").attr("y1", 0).attr("y2", 18).node();
    const ticks = history.map((h) => h[0]);
    svg.on("mousemove", (event) => {
      const tick = Math.max(0, Math.floor(x.invert(d3.pointer(event)[0])));
      const row = history[d3.bisectRight(ticks, tick) - 1];
      const run = runs.find((r) => tick >= r.from && tick < r.to) ?? runs[runs.length - 1];
      showTooltip(event, [`tick ${tick}: ${row ? row[1] : "IDLE"}`, `${run.status} since tick ${run.from}`,
        row && row[2] ? row[2] : ""].filter(Boolean));
    }).on("mouseleave", hideTooltip);

    const changes = runs.filter((r) => r.row);
    const list = el("ol", { class: "transitions" });
    for (const run of changes.slice(-5).reverse()) {
      const [tick, status, message] = run.row;
      list.append(el("li", {},
        el("span", { class: "tick-no", text: `tick ${tick}` }),
        el("span", { class: "status-tag", "data-status": status, text: status }),
        message ? el("span", { class: "msg", title: message, text: message }) : null));
    }
    const rows = this.info.history_rows ?? history.length;
    if (!history.length) {
      box.replaceChildren(svg.node(), el("div", { class: "muted small", text: "never ticked" }));
      return;
    }
    // What the list is: status changes only (the feedback's own changes are on the strip's
    // tooltip, the newest under TIMING).
    const feedback = Math.max(0, rows - changes.length);
    const counts = el("div", { class: "muted small history-counts",
      text: `${plural(changes.length, "status change")} · ${plural(feedback, "feedback change")} (hover the strip)` });
    const shown = Math.min(5, changes.length);
    const which = changes.length === 1 ? "its status change"
      : shown < changes.length ? `its last ${shown} status changes, newest first` : `its status changes, newest first`;
    const caption = el("div", { class: "muted small history-caption", text: `${which}, with the feedback at each:` });
    box.replaceChildren(svg.node(), counts, caption, list);
  }

  #renderTiming() {
    const info = this.info;
    const busy = info.busy;
    const rows = [["ticked", `${info.ticks ?? 0} tick${info.ticks === 1 ? "" : "s"}`]];
    if (busy) {
      rows.push(["busy mean", formatDuration(busy.mean_s)], ["busy max", formatDuration(busy.max_s)],
        ["busy total", formatDuration(busy.total_s)]);
    }
    if (info.last_message) rows.push(["newest feedback", info.last_message]);
    // An answer older than the run's last tick (its server stopped first) says so.
    const last = this.hooks.totalTicks() - 1;
    if (!this.hooks.live() && Number.isInteger(info.tick) && info.tick < last) {
      rows.push(["as of", `tick ${info.tick} (the run went on to tick ${last})`]);
    }
    $("node-timing").replaceChildren(keyValueTable(rows, "timing"));
  }

  /** One small plot per numeric series, a band per string series, over t [s]. */
  #renderTelemetry(width) {
    const box = $("node-telemetry");
    const telemetry = this.info.telemetry;
    this.cursors = [];
    if (!telemetry || !telemetry.t?.length) {
      box.replaceChildren(el("div", { class: "muted small", text: "no telemetry" }));
      return;
    }
    const t = telemetry.t;
    const x = d3.scaleLinear().domain(d3.extent(t)).range([MARGIN.left, width - MARGIN.right]);
    if (x.domain()[0] === x.domain()[1]) x.domain([t[0] - 0.5, t[0] + 0.5]);
    const parts = [el("div", { class: "muted small", text: `skill ${telemetry.skill} · ${t.length} samples` })];
    for (const [key, labels] of Object.entries(telemetry.labels ?? {})) {
      // A string field that never says anything (e.g. an empty message) is not drawn.
      if (labels.some((label) => label !== "" && label !== null)) parts.push(this.#band(key, t, labels, x, width));
    }
    const keys = Object.keys(telemetry.series ?? {}).sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
    for (const key of keys) parts.push(this.#plot(key, t, telemetry.series[key], x, width));
    box.replaceChildren(...parts);
  }

  #plot(key, t, values, x, width) {
    const points = t.map((ti, i) => [ti, values[i]]);
    const finite = values.filter((v) => typeof v === "number" && Number.isFinite(v));
    const [lo, hi] = finite.length ? d3.extent(finite) : [0, 1];
    // A series constant but for rounding (a distance of 1 - 4e-14 and 1) is drawn flat: its
    // noise would fill the plot.
    const flat = hi - lo <= 1e-9 * Math.max(1, Math.abs(lo), Math.abs(hi));
    const mid = (lo + hi) / 2;
    const pad = Math.max(Math.abs(mid) * 0.5, 0.5);
    const y = d3.scaleLinear().domain(flat ? [mid - pad, mid + pad] : [lo, hi]).range([PLOT_H - 6, 14]).nice(3);
    const svg = d3.create("svg").attr("class", "plot").attr("width", width).attr("height", PLOT_H);
    svg.append("rect").attr("class", "plot-bg").attr("x", MARGIN.left).attr("y", 14)
      .attr("width", width - MARGIN.left - MARGIN.right).attr("height", PLOT_H - 20);
    svg.append("text").attr("class", "plot-key").attr("x", MARGIN.left).attr("y", 10).text(key);
    const [y0, y1] = y.domain();
    const [top, bottom] = axisLabels(y, y0, y1);
    svg.append("text").attr("class", "axis-label").attr("x", MARGIN.left - 4).attr("y", 18).text(top);
    svg.append("text").attr("class", "axis-label").attr("x", MARGIN.left - 4).attr("y", PLOT_H - 6).text(bottom);
    const line = d3.line()
      .defined((d) => typeof d[1] === "number" && Number.isFinite(d[1]))
      .x((d) => x(d[0])).y((d) => y(d[1]));
    svg.append("path").attr("class", "series").attr("d", line(points));
    const cursor = svg.append("line").attr("class", "cursor").attr("y1", 12).attr("y2", PLOT_H - 4).node();
    const valueText = svg.append("text").attr("class", "plot-value").attr("x", width - MARGIN.right + 4)
      .attr("y", PLOT_H / 2 + 4).node();
    const bisect = d3.bisector((d) => d).right;
    const valueAt = (tv) => {
      const i = Math.max(0, bisect(t, tv) - 1);
      return formatNumber(values[i]);
    };
    svg.on("mousemove", (event) => {
      const [mx] = d3.pointer(event);
      const tv = x.invert(mx);
      showTooltip(event, [key, `t = ${tv.toFixed(2)} s`, `value ${valueAt(tv)}`]);
    }).on("mouseleave", hideTooltip);
    this.cursors.push({ line: cursor, x, valueText, valueAt });
    return svg.node();
  }

  #band(key, t, labels, x, width) {
    // Texts that differ only in their numbers ("for 0.0 s", "for 0.1 s") are one kind: one
    // colour and one legend entry (the tooltip gives each text whole).
    const colours = bandColours(labels.map(labelKind));
    const colour = (v) => colours.get(labelKind(v));
    const runs = [];
    for (let i = 0; i < t.length; i++) {
      const last = runs[runs.length - 1];
      if (last && last.label === labels[i]) last.to = t[i + 1] ?? t[i];
      else runs.push({ label: labels[i], from: t[i], to: t[i + 1] ?? t[i] });
    }
    // The key and the legend are HTML: they wrap, and a long value is cut with an ellipsis
    // (its whole text on hover), never past the panel's edge.
    const examples = new Map();
    for (const label of labels) if (!examples.has(labelKind(label))) examples.set(labelKind(label), label);
    const kinds = [...colours.keys()];
    const legend = el("div", { class: "band-legend" }, el("span", { class: "plot-key", text: key }));
    for (const v of kinds.slice(0, LEGEND_MAX)) {
      const text = legendText(v);
      const example = examples.get(v);
      legend.append(el("span", { class: "legend-item", title: example === text ? text : `${text}\ne.g. ${example}` },
        el("i", { style: `background:${colours.get(v)}` }), el("span", { class: "legend-text", text })));
    }
    if (kinds.length > LEGEND_MAX) {
      legend.append(el("span", { class: "legend-more muted", title: kinds.slice(LEGEND_MAX).map(legendText).join("\n"),
        text: `+${kinds.length - LEGEND_MAX} more` }));
    }
    const height = BAND_H + 4;
    const svg = d3.create("svg").attr("class", "band").attr("width", width).attr("height", height);
    svg.selectAll("rect.seg").data(runs).join("rect").attr("class", "seg")
      .attr("x", (d) => x(d.from)).attr("y", 2)
      .attr("width", (d) => Math.max(1, x(d.to) - x(d.from))).attr("height", BAND_H)
      .attr("fill", (d) => colour(d.label));
    const cursor = svg.append("line").attr("class", "cursor").attr("y1", 0).attr("y2", height).node();
    svg.on("mousemove", (event) => {
      const tv = x.invert(d3.pointer(event)[0]);
      const run = runs.find((r) => tv >= r.from && tv <= r.to);
      if (run) showTooltip(event, [`${key}: ${run.label}`, `t = ${run.from.toFixed(2)} … ${run.to.toFixed(2)} s`]);
    }).on("mouseleave", hideTooltip);
    this.cursors.push({ line: cursor, x });
    return el("div", { class: "band-box", "data-key": key }, legend, svg.node());
  }

  #renderParams(params) {
    const rows = Object.entries(params ?? {}).map(([k, v]) => [k, v]);
    $("node-params").replaceChildren(rows.length ? paramsTable(rows) : el("div", { class: "muted small", text: "no parameters" }));
  }
}

/** A label's kind: its text with its standalone numbers as "#" (modes and statuses whole). */
function labelKind(label) {
  const text = String(label ?? "");
  if (text in MODE_COLOURS || text.toUpperCase() in STATUS_LABELS) return text;
  return text.replace(NUMBER, "#");
}

/** A kind as its legend writes it: "leg_1 for … s" ("#" stood for any number). */
function legendText(kind) {
  if (kind === "") return "(none)";
  return kind.replace(/(?<![\w.])#(?![\w])/g, "…");
}

/**
 * Each kind's colour, kinds in first-seen order: a mode its own, a status the tree's, any
 * other the palette's entry its text hashes to (the next free one on a clash in the band),
 * so a value keeps its colour whatever else the band holds.
 */
function bandColours(kinds) {
  const colours = new Map();
  const taken = new Set();
  for (const kind of kinds) {
    if (colours.has(kind)) continue;
    let colour = kind === "" ? EMPTY_COLOUR
      : MODE_COLOURS[kind] ?? STATUS_COLOURS[STATUS_LABELS[kind.toUpperCase()]];
    if (!colour) {
      const start = hash(kind) % LABEL_COLOURS.length;
      colour = LABEL_COLOURS[start];
      for (let i = 0; i < LABEL_COLOURS.length; i++) {
        const candidate = LABEL_COLOURS[(start + i) % LABEL_COLOURS.length];
        if (!taken.has(candidate)) {
          colour = candidate;
          break;
        }
      }
    }
    colours.set(kind, colour);
    taken.add(colour);
  }
  return colours;
}

/** FNV-1a of a text (a colour that depends on the text only). */
function hash(text) {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** Runs of equal status over [0, total): {from, to, status, row} (row: the history row that began it). */
function statusRuns(history, total) {
  const runs = [];
  let current = { from: 0, to: total, status: "IDLE", row: null };
  for (const row of history) {
    const [tick, status] = row;
    if (status === current.status) continue;
    if (tick > current.from) {
      current.to = tick;
      runs.push(current);
    }
    current = { from: tick, to: total, status, row };
  }
  runs.push(current);
  return runs;
}

/**
 * Labels of a plot's top and bottom that fit the margin: d3's tick precision when short,
 * else 4 significant digits, else (a range far below the values' size, e.g. 1 - 5e-13 .. 1)
 * the top value and the span.
 */
function axisLabels(y, lo, hi) {
  const precise = y.tickFormat(4);
  if (Math.max(precise(lo).length, precise(hi).length) <= 7) return [precise(hi), precise(lo)];
  const short = d3.format(".4~g");
  if (short(lo) !== short(hi)) return [short(hi), short(lo)];
  return [short(hi), `Δ${d3.format(".0e")(hi - lo)}`];
}

function plural(n, what) {
  return `${n} ${what}${n === 1 ? "" : "s"}`;
}

function rank(key) {
  const i = PREFERRED.indexOf(key);
  return i < 0 ? PREFERRED.length : i;
}

function keyValueTable(rows, cls) {
  const table = el("table", { class: `kv ${cls}` });
  for (const [k, v] of rows) table.append(el("tr", {}, el("th", { text: k }), el("td", { text: v })));
  return table;
}

/** Parameters: plain values as text, nested ones as JSON (long JSON folded). */
function paramsTable(rows) {
  const table = el("table", { class: "kv params" });
  for (const [key, value] of rows) {
    let cell;
    if (value !== null && typeof value === "object") {
      const text = compactJSON(value);
      cell = text.length <= 60
        ? el("td", {}, el("code", { text }))
        : el("td", {}, el("details", {}, el("summary", {}, el("code", { text: `${text.slice(0, 56)}…` })),
          el("pre", { text: JSON.stringify(value, null, 1) })));
    } else {
      cell = el("td", {}, el("code", { text: value === null ? "none" : String(value) }));  // (as `limbtree nodes` says)
    }
    table.append(el("tr", {}, el("th", { text: key }), cell));
  }
  return table;
}
