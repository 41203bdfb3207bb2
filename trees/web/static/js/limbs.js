// The limbs table: one row per limb, health flags, staleness, distances (state to command,
// state to target), active faults.

import { el } from "./util.js";

export const RED_FLAGS = new Set(["POWER_OFF", "BLOCKED", "DISASSEMBLED", "GRIP_LOST", "BUS_FAULT"]);
const AMBER_FLAGS = new Set(["SLOWED", "JOINT_LIMIT", "IK_FAILED", "BAD_INPUT"]);

export function flagClass(flag) {
  if (RED_FLAGS.has(flag)) return "badge red";
  if (AMBER_FLAGS.has(flag)) return "badge amber";
  return "badge grey";
}

/** A distance [mm] for a cell: 2 decimals under 10 mm, 1 under 1 m, none above; "–" for none. */
function millimetres(d) {
  if (d === null || d === undefined) return "–";
  return d.toFixed(d < 10 ? 2 : d < 1000 ? 1 : 0);
}

export class LimbsTable {
  /**
   * @param {HTMLTableElement} table
   * @param {string[]} names  the limbs, in the header's order
   * @param {(name: string) => string} colourOf  the limb's colour in the 3D view
   */
  constructor(table, names, colourOf) {
    this.body = table.tBodies[0];
    this.rows = new Map();
    this.colourOf = colourOf;
    for (const name of names) this.#row(name, false);
    this.#fitNames();  // (once for all: each fit lays the table out)
    // A name too long for its column is cut in its middle ("mar.a…m_1"), where names of
    // one robot's limbs differ the least, never at its end (the whole name on hover).
    new ResizeObserver(() => this.#fitNames()).observe(table);
    if (!names.length) {
      this.placeholder = el("tr", { class: "empty-row" }, el("td", { colspan: 6, class: "muted", text: "no limbs in this run" }));
      this.body.append(this.placeholder);
    }
  }

  #row(name, fit = true) {
    this.placeholder?.remove();
    const row = el("tr", { "data-limb": name });
    const cells = {
      name: el("td", { class: "limb-name", title: name },
        el("span", { class: "swatch", style: `background:${this.colourOf(name)}` }),
        el("span", { class: "limb-label", text: name })),
      health: el("td", { class: "health" }),
      stale: el("td", { class: "stale" }),
      distance: el("td", { class: "num distance" }),
      target: el("td", { class: "num to-target" }),
      faults: el("td", { class: "faults" }),
    };
    row.append(cells.name, cells.health, cells.stale, cells.distance, cells.target, cells.faults);
    this.body.append(row);
    const entry = { row, cells, keys: {}, label: cells.name.lastChild, name };
    this.rows.set(name, entry);
    if (fit) this.#fitNames();
    return entry;
  }

  /**
   * The name column as wide as its longest name needs (at least its 15%, at most 40% of the
   * table), then each name cut to its cell if it must be.
   */
  #fitNames() {
    const header = this.body.parentElement?.tHead?.rows[0]?.cells[0];
    let needed = 0;
    for (const { label, name } of this.rows.values()) {
      label.textContent = name;
      needed = Math.max(needed, label.scrollWidth);
    }
    const table = this.body.parentElement;
    if (header && needed && table.clientWidth) {
      // (the swatch and its margin, 16 px, and the cell's padding, 16 px)
      const width = Math.max(0.15 * table.clientWidth, Math.min(Math.ceil(needed) + 34, 0.4 * table.clientWidth));
      header.style.width = `${Math.round(width)}px`;
    }
    for (const entry of this.rows.values()) this.#fitName(entry);
  }

  /** The longest middle-cut of the name that fits its cell (the whole name if it fits). */
  #fitName(entry) {
    const { label, name } = entry;
    label.textContent = name;
    if (!label.isConnected || label.clientWidth === 0 || label.scrollWidth <= label.clientWidth) return;
    const cut = (keep) => `${name.slice(0, Math.ceil(keep / 2))}…${name.slice(name.length - Math.floor(keep / 2))}`;
    let lo = 1;   // (fits, or the least kept: the first and the last letter)
    let hi = name.length - 1;
    while (lo < hi) {
      const mid = Math.ceil((lo + hi) / 2);
      label.textContent = cut(mid);
      if (label.scrollWidth <= label.clientWidth) lo = mid;
      else hi = mid - 1;
    }
    label.textContent = cut(Math.max(2, lo));
  }

  /** Set a cell's content only when it changed (frames come up to 10 times a second). */
  #set(entry, cell, key, build) {
    if (entry.keys[cell] === key) return;
    entry.keys[cell] = key;
    entry.cells[cell].replaceChildren(...build());
  }

  update(frame) {
    const faultsByLimb = new Map();
    for (const fault of frame.faults ?? []) {
      if (!faultsByLimb.has(fault.limb)) faultsByLimb.set(fault.limb, []);
      faultsByLimb.get(fault.limb).push(fault);
    }
    for (const [name, limb] of Object.entries(frame.limbs ?? {})) {
      const entry = this.rows.get(name) ?? this.#row(name);
      const flags = limb.health_flags ?? [];
      this.#set(entry, "health", flags.join(","), () =>
        flags.length ? flags.map((f) => el("span", { class: flagClass(f), text: f })) : [el("span", { class: "badge ok", text: "OK" })]);
      this.#set(entry, "stale", String(!!limb.stale), () =>
        limb.stale ? [el("span", { class: "badge amber", text: "stale" })] : [el("span", { class: "muted", text: "–" })]);
      const dText = millimetres(limb.distance_mm);
      this.#set(entry, "distance", dText, () => [dText]);
      const tText = millimetres(limb.target_mm);
      this.#set(entry, "target", tText, () => [tText]);
      const faults = faultsByLimb.get(name) ?? [];
      const fKey = faults.map((f) => `${f.fault}@${f.since_t}`).join(",");
      this.#set(entry, "faults", fKey, () =>
        faults.length
          ? faults.map((f) => el("span", { class: "badge red", title: `since t = ${Number(f.since_t).toFixed(2)} s`, text: `${f.fault} since ${Number(f.since_t).toFixed(1)}\u00a0s` }))
          : [el("span", { class: "muted", text: "–" })]);
      const bad = flags.some((f) => RED_FLAGS.has(f)) || faults.length > 0;
      entry.row.classList.toggle("bad", bad);
      entry.row.classList.toggle("stale", !!limb.stale);
    }
  }
}
