// The timeline: a scrubber (input#timeline) and a strip of event marks above it.

import { EVENT_COLOURS, eventLane, showTooltip, hideTooltip } from "./util.js";

const SVG_NS = "http://www.w3.org/2000/svg";
const THUMB = 14;         // the range thumb's width [px] (style.css): marks align with it
const LANE_H = 9;
const LANE_TOP = 3;
const LANE_NAMES = ["faults", "control", "links"];
const NEAR = 4;           // a mark within this many pixels is under the pointer [px]

export class Timeline {
  /**
   * @param {{onScrub: (tick: number) => void, onPick: (tick: number) => void}} handlers
   *   onScrub: the user moves the scrubber (called at most once per animation frame);
   *   onPick: the user clicks the strip: the tick of the nearest event mark under the
   *   pointer (#near: the marks its tooltip lists), else the tick under the pointer.
   */
  constructor({ onScrub, onPick }) {
    this.input = document.getElementById("timeline");
    this.svg = document.getElementById("timeline-marks");
    this.onScrub = onScrub;
    this.onPick = onPick;
    this.ticks = 1;
    this.events = [];
    this.keys = new Set();    // events already drawn (deduplicated)
    this.scheduled = false;
    this.input.addEventListener("input", () => this.#scheduleScrub());
    // The strip's width, kept by the observer: reading clientWidth per frame would force
    // the browser to lay the page out again each time (most of a live page's cost).
    this.width = 0;
    new ResizeObserver((entries) => {
      this.width = entries[0].contentRect.width;
      this.#redraw();
    }).observe(this.svg);
    this.svg.addEventListener("mousemove", (event) => this.#hover(event));
    this.svg.addEventListener("mouseleave", () => {
      hideTooltip();
      this.hoverLine?.setAttribute("display", "none");
    });
    this.svg.addEventListener("click", (event) => {
      // A mark's own tick: on a long record a pixel spans many ticks (27 for 36,000 ticks
      // on 1,300 px), and the pixel's tick may be before the event the tooltip named.
      const tick = this.#pickAt(event);
      if (tick !== null) this.onPick(tick);
    });
  }

  /**
   * Coalesce input events: the scrub handler runs once per animation frame, for the
   * position the user gave last (read at the event: a frame that lands before the
   * animation frame, such as a refetch while the skeletons load, must not move it back).
   */
  #scheduleScrub() {
    this.scrubbed = Number(this.input.value);
    if (this.scheduled) return;
    this.scheduled = true;
    requestAnimationFrame(() => {
      this.scheduled = false;
      this.onScrub(this.scrubbed);
    });
  }

  get value() {
    return Number(this.input.value);
  }

  /** Move the thumb (when a frame is shown that the user did not scrub to). */
  set value(tick) {
    if (this.scheduled) return;  // the user's scrub, not yet handled, keeps the thumb
    if (tick > Number(this.input.max)) this.#applyTicks();  // (a range clamps its value)
    if (Number(this.input.value) !== tick) this.input.value = String(tick);
    this.#moveCursor();
  }

  /**
   * The number of ticks grew (live) or is known (replay). A live run grows it a few times
   * a second; the scrubber's range and the marks follow once a second (each change re-lays
   * the strip out and repaints it: in a software-rendered browser that is most of a
   * watching page's work), or at once when a frame past the end is shown.
   */
  setTicks(ticks) {
    const n = Math.max(1, ticks);
    if (n === this.ticks && this.input.max === String(n - 1)) return;
    this.ticks = n;
    if (this.ticksTimer) return;
    if (this.input.max === "" || Number(this.input.max) <= 0) {
      this.#applyTicks();
      return;
    }
    this.ticksTimer = setTimeout(() => this.#applyTicks(), 1000);
  }

  #applyTicks() {
    clearTimeout(this.ticksTimer);
    this.ticksTimer = null;
    const max = String(this.ticks - 1);
    if (this.input.max === max) return;
    this.input.max = max;
    // At once: the range and its marks change in one frame (in a live run this is within
    // the frame's own animation frame, see the value setter). The marks only move.
    this.#moveMarks();
    this.#moveCursor();
  }

  /**
   * Add events (deduplicated: the live socket and /api/run may both report one). Their
   * marks are added to those drawn; nothing is drawn again.
   */
  addEvents(events) {
    for (const event of events ?? []) {
      const key = `${event.tick}|${event.kind}|${event.limb ?? ""}|${event.node ?? ""}|${event.fault ?? ""}|${event.detail ?? ""}`;
      if (this.keys.has(key)) continue;
      this.keys.add(key);
      this.events.push(event);
      if (this.layers) this.#addMark(event);
    }
  }

  /**
   * The last tick of the range as drawn (the scrubber's max): a tick count grown since,
   * not yet applied (setTicks), moves nothing until it is, so that every mark, the cursor
   * and the thumb share one scale.
   */
  #span() {
    return Math.max(1, Number(this.input.max) || 0);
  }

  /** x of a tick's centre, matching the range thumb's position. */
  #x(tick) {
    const width = this.width;
    const span = this.#span();
    return THUMB / 2 + (Math.min(tick, span) / span) * (width - THUMB);
  }

  #tickAt(event) {
    const rect = this.svg.getBoundingClientRect();
    const x = event.clientX - rect.left;
    const span = this.#span();
    const tick = Math.round(((x - THUMB / 2) / Math.max(1, rect.width - THUMB)) * span);
    return Math.min(span, Math.max(0, tick));
  }

  /** The marks under the pointer: within NEAR px, in the pointer's lane (any lane off them),
   * nearest first. */
  #near(event) {
    const rect = this.svg.getBoundingClientRect();
    const x = event.clientX - rect.left;
    const y = event.clientY - rect.top;
    const lane = Math.floor((y - LANE_TOP) / LANE_H);
    return (this.marks ?? [])
      .filter((m) => Math.abs(m.x - x) <= NEAR && (lane < 0 || lane > 2 || m.lane === lane))
      .sort((a, b) => Math.abs(a.x - x) - Math.abs(b.x - x));
  }

  /** The tick a click shows: the nearest mark's under the pointer, else the pixel's. */
  #pickAt(event, near = this.#near(event)) {
    return near.length ? near[0].event.tick : this.#tickAt(event);
  }

  /** Draw the strip anew (at start, and when its width changes). */
  #redraw() {
    const width = this.width;
    if (!width) return;
    const frag = document.createDocumentFragment();
    // Lane backgrounds and names.
    LANE_NAMES.forEach((name, lane) => {
      const bg = document.createElementNS(SVG_NS, "rect");
      bg.setAttribute("class", "lane");
      bg.setAttribute("x", 0);
      bg.setAttribute("y", LANE_TOP + lane * LANE_H);
      bg.setAttribute("width", width);
      bg.setAttribute("height", LANE_H - 1);
      frag.append(bg);
    });
    // Gates above the rest: a run's pauses often share their tick, and would hide them.
    this.layers = { plain: document.createElementNS(SVG_NS, "g"), gates: document.createElementNS(SVG_NS, "g") };
    frag.append(this.layers.plain, this.layers.gates);
    this.marks = [];
    for (const event of this.events) this.#addMark(event);
    this.cursor = document.createElementNS(SVG_NS, "line");
    this.cursor.setAttribute("class", "cursor");
    this.hoverLine = document.createElementNS(SVG_NS, "line");
    this.hoverLine.setAttribute("class", "hover-line");
    this.hoverLine.setAttribute("display", "none");
    frag.append(this.cursor, this.hoverLine);
    this.svg.replaceChildren(frag);
    this.#moveCursor();
  }

  #addMark(event) {
    const colour = EVENT_COLOURS[event.kind];
    if (!colour) return;   // limb_claimed/released etc. are not marked
    const lane = eventLane(event.kind);
    const x = this.#x(event.tick);
    const mark = document.createElementNS(SVG_NS, "rect");
    mark.setAttribute("class", "mark");
    mark.setAttribute("x", x - 1.5);
    mark.setAttribute("y", LANE_TOP + lane * LANE_H);
    mark.setAttribute("width", 3);
    mark.setAttribute("height", LANE_H - 1);
    mark.setAttribute("fill", colour);
    mark.setAttribute("data-kind", event.kind);
    const gate = event.kind === "gate" || event.kind === "gate_answered";
    (gate ? this.layers.gates : this.layers.plain).append(mark);
    this.marks.push({ x, lane, event, mark });
  }

  /** The range changed: every mark to its tick's new place (an attribute each). */
  #moveMarks() {
    for (const m of this.marks ?? []) {
      const x = this.#x(m.event.tick);
      if (x === m.x) continue;
      m.x = x;
      m.mark.setAttribute("x", x - 1.5);
    }
  }

  #moveCursor() {
    if (!this.cursor) return;
    const x = this.#x(this.value);
    this.cursor.setAttribute("x1", x);
    this.cursor.setAttribute("x2", x);
    this.cursor.setAttribute("y1", 0);
    this.cursor.setAttribute("y2", LANE_TOP + LANE_NAMES.length * LANE_H + 2);
  }

  /** Tooltip of the marks under the pointer (within a few pixels), else the tick. */
  #hover(event) {
    const rect = this.svg.getBoundingClientRect();
    const near = this.#near(event);
    const tick = this.#pickAt(event, near);   // (the line marks where a click goes)
    const hx = this.#x(tick);
    this.hoverLine.setAttribute("x1", hx);
    this.hoverLine.setAttribute("x2", hx);
    this.hoverLine.setAttribute("y1", 0);
    this.hoverLine.setAttribute("y2", rect.height);
    this.hoverLine.removeAttribute("display");
    if (!near.length) {
      showTooltip(event, [`tick ${tick}`, "click to show it"]);
      return;
    }
    const lines = [];
    for (const { event: e } of near.slice(0, 6)) {
      const who = [e.limb, e.fault, e.node ? `node ${e.node}` : null].filter(Boolean).join(" · ");
      lines.push(`${e.kind}${who ? ` — ${who}` : ""}`);
      // The contract says `detail`; records name it per kind (why, reason, prompt, ...).
      const detail = e.detail ?? e.prompt ?? e.why ?? e.reason ?? e.message ?? e.error ?? "";
      lines.push(`   tick ${e.tick} · t = ${Number(e.t ?? 0).toFixed(2)} s${detail ? ` · ${detail}` : ""}`);
    }
    if (near.length > 6) lines.push(`… and ${near.length - 6} more`);
    showTooltip(event, lines);
  }
}
