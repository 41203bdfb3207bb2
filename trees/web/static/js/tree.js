// The behaviour tree: an SVG tidy tree (d3.tree), laid out once, then updated in place.
//
// Every node of the header gets its <g> element once, at start. A new frame only changes
// attributes (data-status, data-ticked) of the elements whose status changed; the layout is
// computed again only when a subtree is collapsed or expanded: by the user, by a search, or
// by the automatic folding of a tree too big to read whole (see #applyAutoFolds).
//
// A parent with more than STACK_CHILDREN children shows each run of STACK_RUN or more
// consecutive leaves (or folded composites) among them as a grid of columns, top to bottom
// then left to right, not as one row: 480 leaves side by side make a row 36,000 px wide.
// When WRAP_SUBTREES or more of those children are unfolded composites, all its children
// go into one such grid, each unfolded one as a block (its subtree laid out on its own):
// fifty sequences unfolded side by side would make the same endless row.

import { showTooltip, hideTooltip } from "./util.js";

const d3 = window.d3;
const SVG_NS = "http://www.w3.org/2000/svg";

const BOX_H = 38;          // node box height [px]
const LEVEL_H = 84;        // vertical distance between levels [px]
const PAD_X = 12;          // horizontal padding inside a box [px]
const MIN_W = 64;
/** Automatic folding (a big tree) re-lays the tree out at most this often [ms]. */
const AUTO_LAYOUT_MS = 500;
const SIBLING_GAP = 14;    // horizontal gap between boxes of siblings [px]
const COUSIN_GAP = 30;     // ... and between boxes of different parents
const STACK_CHILDREN = 8;  // more children than this: runs of leaves are stacked in a grid
const STACK_RUN = 3;       // ... runs of at least this many
const GRID_ROWS = 6;       // rows of a grid, at most
const ROW_H = 46;          // row pitch of a grid of leaves [px]
const ROW_H_FOLDS = 60;    // ... of a grid with folded composites (their toggle below the box)
const SPINE_GAP = 16;      // room left of a grid column for its link spine [px]
const COL_GAP = 12;        // between grid columns [px]
const WRAP_SUBTREES = 4;   // this many unfolded composites among many children: a grid of blocks
const BLOCK_GAP = 26;      // below a block (an unfolded subtree) in a grid column [px]
const ITEM_GAP = 8;        // below a single box in a grid of blocks [px]
const BLOCKS_ASPECT = [1, 3];  // a grid of blocks is shaped as the pane, within these ratios
/** The smallest scale at which the tree reads: a tree that fits the pane only smaller
 * starts with the composites off the running path folded (initialView). */
const LEGIBLE = 0.45;
/** The least scale of a fit: node names (13 px) at 10 px at least. A tree that fits the
 * pane only smaller is shown at this scale around its running node (else its root), and
 * the user pans (drag, shift+wheel) to the rest, or zooms out by hand. */
const READABLE = 10 / 13;
const NAME_FONT = "600 13px system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif";
const TYPE_FONT = "10px system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif";

/** Text widths measured once with a canvas (far cheaper than getBBox on 500 nodes). */
function makeMeasurer() {
  const ctx = document.createElement("canvas").getContext("2d");
  return (text, font) => {
    ctx.font = font;
    return ctx.measureText(text).width;
  };
}

function svgEl(tag, attrs = {}) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  return node;
}

export class TreeView {
  /**
   * @param {SVGSVGElement} svg
   * @param {object} root  the header's tree (NODE)
   * @param {{onSelect: (id: string) => void}} handlers
   */
  constructor(svg, root, { onSelect }) {
    this.svg = svg;
    this.root = root;
    this.onSelect = onSelect;
    this.nodes = new Map();       // id -> entry (see #collect)
    this.collapsed = new Set();
    this.auto = false;            // folding the composites off the running path (big trees)
    this.autoDecided = false;
    this.pinned = new Set();      // composites the user folded or unfolded: auto leaves them
    this.fitted = false;          // the view is the last fit() (no zoom or pan since)
    this.autoLaidAt = -Infinity;  // when automatic folding last re-laid the tree out [ms]
    this.autoTimer = null;        // a re-layout held back (at most one every AUTO_LAYOUT_MS)
    this.selected = null;
    this.hovered = null;          // {entry, event}: the node under the pointer (its tooltip)
    this.matches = [];
    this.matchIndex = -1;
    this.breakpoints = new Set(); // node ids with any breakpoint
    this.#collect(root, null, 0);
    this.#sizeToPane();
    this.#build();
    this.#setupZoom();
    this.layout(false);
  }

  // ---------------------------------------------------------------- structure

  #collect(data, parent, depth) {
    const entry = {
      id: String(data.id), data, parent, depth, children: [], status: null, ticked: null,
      message: "", g: null, link: null, x: 0, y: 0, w: 0, visible: true, size: 1,
      lower: `${data.name ?? ""}`.toLowerCase(),
    };
    this.nodes.set(entry.id, entry);
    if (parent) parent.children.push(entry);
    for (const child of data.children ?? []) this.#collect(child, entry, depth + 1);
    entry.size = 1 + entry.children.reduce((n, c) => n + c.size, 0);
    return entry;
  }

  /** Create the SVG elements of every node and edge (once). */
  #build() {
    const measure = makeMeasurer();
    this.svg.replaceChildren();
    this.viewport = svgEl("g", { class: "viewport" });
    this.linkLayer = svgEl("g", { class: "links" });
    this.nodeLayer = svgEl("g", { class: "nodes" });
    this.viewport.append(this.linkLayer, this.nodeLayer);
    this.svg.append(this.viewport);

    const linkFrag = document.createDocumentFragment();
    const nodeFrag = document.createDocumentFragment();
    for (const entry of this.nodes.values()) {
      const name = String(entry.data.name ?? entry.id);
      const type = String(entry.data.type ?? "");
      entry.w = Math.max(
        MIN_W,
        Math.ceil(Math.max(measure(name, NAME_FONT), measure(type, TYPE_FONT) + 18)) + 2 * PAD_X,
      );
      entry.g = this.#nodeElement(entry, name, type);
      nodeFrag.append(entry.g);
      if (entry.parent) {
        entry.link = svgEl("path", { class: "link", "data-status": "IDLE" });
        linkFrag.append(entry.link);
      }
    }
    this.linkLayer.append(linkFrag);
    this.nodeLayer.append(nodeFrag);

    this.nodeLayer.addEventListener("click", (event) => this.#onClick(event));
    this.nodeLayer.addEventListener("mouseover", (event) => this.#onHover(event));
    this.nodeLayer.addEventListener("mousemove", (event) => this.#onHover(event));
    this.nodeLayer.addEventListener("mouseout", () => {
      this.hovered = null;
      hideTooltip();
    });
  }

  #nodeElement(entry, name, type) {
    const { w } = entry;
    const g = svgEl("g", {
      class: "node", "data-node-id": entry.id, "data-status": "IDLE", "data-collapsed": "false",
    });
    entry.status = "IDLE";
    g.append(
      svgEl("rect", { class: "box", x: -w / 2, y: -BOX_H / 2, width: w, height: BOX_H, rx: 5 }),
      svgEl("rect", { class: "bar", x: -w / 2, y: -BOX_H / 2, width: 5, height: BOX_H, rx: 2 }),
    );
    const typeText = svgEl("text", { class: "type", x: -w / 2 + PAD_X, y: -BOX_H / 2 + 13 });
    typeText.textContent = type;
    const nameText = svgEl("text", { class: "name", x: -w / 2 + PAD_X, y: BOX_H / 2 - 9 });
    nameText.textContent = name;
    g.append(typeText, nameText);
    // Breakpoint dot (shown by CSS when data-break is set).
    g.append(svgEl("circle", { class: "break-dot", cx: w / 2 - 8, cy: -BOX_H / 2 + 8, r: 4.5 }));
    if (entry.children.length) {
      const toggle = svgEl("g", { class: "toggle", transform: `translate(0,${BOX_H / 2 + 8})` });
      toggle.append(svgEl("circle", { r: 7 }));
      const sign = svgEl("text", { class: "sign", y: 4 });
      sign.textContent = "−";
      const hidden = svgEl("text", { class: "hidden-count", x: 11, y: 4 });
      toggle.append(sign, hidden);
      g.append(toggle);
      entry.sign = sign;
      entry.hiddenText = hidden;
    }
    return g;
  }

  /**
   * Give the SVG its pane's size in pixels. With a percentage size, Chrome lays out all of
   * the SVG's text again whenever anything else on the page changes (the limbs table on
   * every frame): about 1000 texts for a 500-node tree, tens of ms per frame.
   */
  #sizeToPane() {
    const pane = this.svg.parentElement;
    const apply = () => {
      const width = Math.floor(pane.clientWidth);
      const height = Math.floor(pane.clientHeight);
      if (!width || !height) return;
      this.svg.style.width = `${width}px`;
      this.svg.style.height = `${height}px`;
    };
    apply();
    new ResizeObserver(apply).observe(pane);
  }

  // ---------------------------------------------------------------- layout

  /** Lay out the visible part of the tree and move the elements (animated if asked). */
  layout(animate = true) {
    const { width, height } = this.svg.getBoundingClientRect();
    const [least, most] = BLOCKS_ASPECT;
    this.blocksAspect = height > 0 ? Math.min(most, Math.max(least, width / height)) : least;
    const placed = this.#arrange(this.#layoutNode(this.nodes.get(String(this.root.id))));
    const visible = new Set(placed.map((entry) => entry.id));

    const duration = animate ? 250 : 0;
    for (const entry of this.nodes.values()) {
      const show = visible.has(entry.id);
      if (!show) {
        // Hidden nodes stay in the DOM (display none) at their collapsed ancestor's place.
        if (entry.visible) {
          entry.g.setAttribute("display", "none");
          if (entry.link) entry.link.setAttribute("display", "none");
        }
        entry.visible = false;
        continue;
      }
      const wasHidden = !entry.visible;
      entry.visible = true;
      entry.g.removeAttribute("display");
      if (entry.link) entry.link.removeAttribute("display");
      this.#place(entry, wasHidden ? 0 : duration);
    }
    this.#updateToggles();
  }

  /**
   * Lay out a layout tree (see #layoutNode) with its root at (0, 0): sets its entries' x, y
   * and spine, and returns them.
   */
  #arrange(layoutRoot) {
    const hierarchy = d3.hierarchy(layoutRoot, (d) => d.kids);
    // nodeSize x = 1 so that separation() is in pixels: half widths plus a gap.
    d3.tree()
      .nodeSize([1, LEVEL_H])
      .separation((a, b) => (a.data.w + b.data.w) / 2 + (a.parent === b.parent ? SIBLING_GAP : COUSIN_GAP))(
        hierarchy,
      );
    const placed = [];
    hierarchy.each((h) => {
      const d = h.data;
      if (d.entry) {
        d.entry.x = h.x;
        d.entry.y = h.y;
        d.entry.spine = null;
        placed.push(d.entry);
      } else if (d.blocks) {
        this.#placeBlocks(d, h.x, h.y, placed);
      } else if (d.grid) {
        this.#placeGrid(d, h.x, h.y, placed);
      }
    });
    return placed;
  }

  #unfolded(entry) {
    return entry.children.length > 0 && !this.collapsed.has(entry.id);
  }

  /** The layout's tree: a node per visible entry, and a grid per stacked run of leaves. */
  #layoutNode(entry) {
    const node = { entry, w: entry.w, kids: null };
    if (!this.#unfolded(entry)) return node;
    const many = entry.children.length > STACK_CHILDREN;
    if (many && entry.children.filter((child) => this.#unfolded(child)).length >= WRAP_SUBTREES) {
      node.kids = [this.#blocksNode(entry.children)];
      return node;
    }
    const kids = [];
    let run = [];
    const flush = () => {
      if (run.length >= STACK_RUN) kids.push(this.#gridNode(run));
      else for (const child of run) kids.push(this.#layoutNode(child));
      run = [];
    };
    for (const child of entry.children) {
      if (many && (!child.children.length || this.collapsed.has(child.id))) {
        run.push(child);
      } else {
        flush();
        kids.push(this.#layoutNode(child));
      }
    }
    flush();
    node.kids = kids;
    return node;
  }

  /**
   * A run of leaves as a grid: GRID_ROWS rows at most, filled column by column. Below it,
   * a chain of empty nodes as wide as the grid, one per level its height spans, keeps the
   * neighbours' deeper nodes clear of it (the tidy tree separates nodes level by level).
   */
  #gridNode(items) {
    const cols = Math.ceil(items.length / GRID_ROWS);
    const rows = Math.ceil(items.length / cols);
    const colW = [];
    for (let c = 0; c < cols; c++) {
      colW.push(Math.max(...items.slice(c * rows, (c + 1) * rows).map((e) => e.w)));
    }
    const w = colW.reduce((a, b) => a + b, 0) + cols * SPINE_GAP + (cols - 1) * COL_GAP;
    const folds = items.some((e) => e.children.length);
    const rowH = folds ? ROW_H_FOLDS : ROW_H;
    const height = (rows - 1) * rowH + BOX_H + (folds ? 16 : 0);
    return this.#padded({ grid: true, items, rows, colW, rowH, w, kids: null }, height);
  }

  /** Hang below `grid` the chain of empty nodes that keeps deeper neighbours clear of it. */
  #padded(grid, height) {
    let below = grid;
    for (let level = 1; level * LEVEL_H < height + 10; level++) {
      const pad = { w: grid.w, kids: null };
      below.kids = [pad];
      below = pad;
    }
    return grid;
  }

  /**
   * All of a parent's children as a grid of blocks, filled column by column: a box for a
   * leaf or a folded composite, its whole subtree (laid out on its own) for an unfolded one.
   * The columns are as tall as makes the grid most nearly as wide for its height as the pane.
   */
  #blocksNode(children) {
    const items = children.map((entry) => {
      const fold = entry.children.length ? 16 : 0;
      if (!this.#unfolded(entry)) {
        return { entry, placed: null, left: -entry.w / 2, w: entry.w, h: BOX_H + fold, gap: ITEM_GAP };
      }
      const placed = this.#arrange(this.#layoutNode(entry));
      let x0 = Infinity, x1 = -Infinity, y1 = -Infinity;
      for (const e of placed) {
        // (a grid inside keeps its spines clear of this column's)
        x0 = Math.min(x0, e.x - e.w / 2, e.spine ? e.spine.x - SPINE_GAP / 2 : Infinity);
        x1 = Math.max(x1, e.x + e.w / 2);
        y1 = Math.max(y1, e.y + BOX_H / 2 + (e.children.length ? 16 : 0));
      }
      return { entry, placed, left: x0, w: x1 - x0, h: y1 + BOX_H / 2, gap: BLOCK_GAP };
    });
    // Columns filled in order up to a height: of the heights that make 1, 2, ... columns,
    // the one whose grid is shaped most nearly as the pane.
    const total = items.reduce((a, it) => a + it.h + it.gap, 0);
    const tallest = Math.max(...items.map((it) => it.h + it.gap));
    let best = null;
    for (let k = 1; k <= items.length; k++) {
      const grid = this.#fillColumns(items, Math.max(tallest, total / k));
      const misfit = Math.abs(Math.log(grid.w / grid.height / this.blocksAspect));
      if (!best || misfit < best.misfit) best = { ...grid, misfit };
      if (grid.columns.length === items.length) break;
    }
    const { columns, w, height } = best;
    return this.#padded({ blocks: true, columns, w, kids: null }, height);
  }

  /** Blocks in columns, in order, each column up to `limit` tall (at least one block). */
  #fillColumns(items, limit) {
    const columns = [];
    let column = null;
    for (const item of items) {
      if (!column || (column.items.length && column.h + item.h + item.gap > limit)) {
        column = { items: [], w: 0, h: 0 };
        columns.push(column);
      }
      column.items.push(item);
      column.w = Math.max(column.w, item.w);
      column.h += item.h + item.gap;
    }
    const w = columns.reduce((a, c) => a + c.w, 0) + columns.length * SPINE_GAP + (columns.length - 1) * COL_GAP;
    const height = Math.max(...columns.map((c) => c.h - c.items[c.items.length - 1].gap));
    return { columns, w, height };
  }

  /** Place a grid of blocks whose top row's boxes are centred at height y. */
  #placeBlocks(grid, x, y, placed) {
    let left = x - grid.w / 2;
    for (const column of grid.columns) {
      const colLeft = left + SPINE_GAP;
      let top = y;
      for (const item of column.items) {
        const dx = colLeft - item.left;
        if (item.placed) {
          for (const e of item.placed) {
            e.x += dx;
            e.y += top;
            if (e.spine) {
              e.spine.x += dx;
              e.spine.top += top;
            }
            placed.push(e);
          }
        } else {
          item.entry.x = dx;
          item.entry.y = top;
          placed.push(item.entry);
        }
        item.entry.spine = { x: colLeft - SPINE_GAP / 2, top: y - BOX_H / 2 };
        top += item.h + item.gap;
      }
      left = colLeft + column.w + COL_GAP;
    }
  }

  #placeGrid(grid, x, y, placed) {
    let left = x - grid.w / 2;
    grid.colW.forEach((colW, c) => {
      const colLeft = left + SPINE_GAP;
      grid.items.slice(c * grid.rows, (c + 1) * grid.rows).forEach((entry, r) => {
        entry.x = colLeft + entry.w / 2;
        entry.y = y + r * grid.rowH;
        entry.spine = { x: colLeft - SPINE_GAP / 2, top: y - BOX_H / 2 };
        placed.push(entry);
      });
      left = colLeft + colW + COL_GAP;
    });
  }

  #place(entry, duration) {
    const transform = `translate(${entry.x},${entry.y})`;
    const path = entry.parent ? this.#linkPath(entry.parent, entry) : null;
    if (duration > 0) {
      d3.select(entry.g).transition().duration(duration).attr("transform", transform);
      if (path) d3.select(entry.link).transition().duration(duration).attr("d", path);
    } else {
      d3.select(entry.g).interrupt().attr("transform", transform);
      if (path) d3.select(entry.link).interrupt().attr("d", path);
    }
  }

  #linkPath(parent, child) {
    const x0 = parent.x;
    const y0 = parent.y + BOX_H / 2 + (parent.children.length ? 15 : 0);
    if (child.spine) {
      // In a grid: down to a bus above it, along to the column's spine, down the spine.
      const { x: sx, top } = child.spine;
      const ym = (y0 + top) / 2;
      return `M${x0},${y0}V${ym}H${sx}V${child.y}H${child.x - child.w / 2}`;
    }
    const x1 = child.x;
    const y1 = child.y - BOX_H / 2;
    const ym = (y0 + y1) / 2;
    return `M${x0},${y0}C${x0},${ym} ${x1},${ym} ${x1},${y1}`;
  }

  #updateToggles() {
    for (const entry of this.nodes.values()) {
      if (!entry.children.length) continue;
      const collapsed = this.collapsed.has(entry.id);
      entry.g.setAttribute("data-collapsed", collapsed ? "true" : "false");
      entry.sign.textContent = collapsed ? "+" : "−";
      entry.hiddenText.textContent = collapsed ? `${entry.size - 1}` : "";
    }
    this.#updateHiddenStatus();
  }

  // ---------------------------------------------------------------- zoom

  #setupZoom() {
    this.zoom = d3
      .zoom()
      .scaleExtent([0.02, 4])
      .on("zoom", (event) => {
        this.viewport.setAttribute("transform", event.transform.toString());
        if (event.sourceEvent) this.fitted = false;   // the user zoomed or panned
        // Far out, the small type labels are noise: drop them.
        this.svg.classList.toggle("far", event.transform.k < 0.5);
      });
    // A horizontal wheel (a touchpad's sideways swipe) or shift+wheel pans; d3 zooms on
    // the rest.
    const pans = (event) => event.shiftKey || Math.abs(event.deltaX) > Math.abs(event.deltaY);
    this.zoom.filter((event) =>
      event.type === "wheel" ? !pans(event) : !event.ctrlKey && !event.button);
    d3.select(this.svg).call(this.zoom).on("dblclick.zoom", null);
    this.svg.addEventListener("wheel", (event) => {
      if (!pans(event)) return;
      event.preventDefault();
      const unit = event.deltaMode === 1 ? 16 : event.deltaMode === 2 ? 400 : 1;
      const dx = (event.shiftKey && !event.deltaX ? event.deltaY : event.deltaX) * unit;
      const dy = event.shiftKey ? 0 : event.deltaY * unit;
      const k = d3.zoomTransform(this.svg).k;
      d3.select(this.svg).call(this.zoom.translateBy, -dx / k, -dy / k);
      this.fitted = false;
    }, { passive: false });
  }

  /** Bounds of the visible boxes. */
  #bounds(entries = null) {
    let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
    for (const entry of entries ?? this.nodes.values()) {
      if (!entry.visible) continue;
      x0 = Math.min(x0, entry.x - entry.w / 2);
      x1 = Math.max(x1, entry.x + entry.w / 2);
      y0 = Math.min(y0, entry.y - BOX_H / 2);
      y1 = Math.max(y1, entry.y + BOX_H / 2 + 16);
    }
    return { x0, x1, y0, y1 };
  }

  /** The scale at which the whole visible tree fits the pane. */
  #fitScale() {
    const { width, height } = this.svg.getBoundingClientRect();
    const b = this.#bounds();
    const pad = 24;
    return Math.min(1.3, (width - 2 * pad) / (b.x1 - b.x0), (height - 2 * pad - 30) / (b.y1 - b.y0));
  }

  /**
   * The first view: the whole tree when it is readable so. A tree that is not (a 500-node
   * tree fitted whole is a thin unreadable strip) starts with its composites off the
   * running path folded, and follows the running path from then on (#applyAutoFolds);
   * fitted when that reads, else the top of the tree around the running node or the root at
   * a readable scale.
   */
  initialView() {
    const { width, height } = this.svg.getBoundingClientRect();
    if (!width || !height) return;
    if (!this.autoDecided) {
      this.autoDecided = true;
      if (this.#fitScale() < LEGIBLE) {
        this.auto = true;
        this.#applyAutoFolds(false);
      }
    }
    if (this.#fitScale() >= LEGIBLE) {
      this.fit(false);
      return;
    }
    if (this.gotoRunning(false)) return;
    const root = this.nodes.get(String(this.root.id));
    const k = 0.85;
    const transform = d3.zoomIdentity.translate(width / 2 - k * root.x, 70 - k * root.y).scale(k);
    d3.select(this.svg).call(this.zoom.transform, transform);
    this.fitted = false;
  }

  /** The RUNNING nodes with no RUNNING child: the ends of the running path. */
  runningLeaves() {
    const out = [];
    for (const entry of this.nodes.values()) {
      if (entry.status === "RUNNING" && !entry.children.some((c) => c.status === "RUNNING")) out.push(entry);
    }
    return out;
  }

  /** Centre the next end of the running path (revealing it); false if nothing runs. */
  gotoRunning(animate = true) {
    const leaves = this.runningLeaves();
    if (!leaves.length) return false;
    this.runningIndex = ((this.runningIndex ?? -1) + 1) % leaves.length;
    const entry = leaves[this.runningIndex];
    if (this.reveal(entry.id)) this.layout(false);
    this.#showPath(entry, animate);
    this.fitted = false;
    return true;
  }

  /** Centre a node horizontally with as much of its path from the root above it as fits. */
  #showPath(entry, animate) {
    const { width, height } = this.svg.getBoundingClientRect();
    const root = this.nodes.get(String(this.root.id));
    const k = Math.max(d3.zoomTransform(this.svg).k, 0.85);
    const fits = (entry.y - root.y) * k + 160 < height;
    const ty = fits ? 70 - k * root.y : height - 110 - k * entry.y;
    const transform = d3.zoomIdentity.translate(width / 2 - k * entry.x, ty).scale(k);
    const sel = d3.select(this.svg);
    (animate ? sel.transition().duration(350) : sel).call(this.zoom.transform, transform);
  }

  /**
   * Zoom so that the whole visible tree fits the pane; one that would be drawn smaller
   * than READABLE is drawn at it, around its running node (else its root), its edges kept
   * in the pane's.
   */
  fit(animate = true) {
    const { width, height } = this.svg.getBoundingClientRect();
    if (!width || !height) return;
    const b = this.#bounds();
    const pad = 24;
    const k = Math.max(this.#fitScale(), Math.min(READABLE, 1.3));
    let tx = width / 2 - k * (b.x0 + b.x1) / 2;
    if (k * (b.x1 - b.x0) > width - 2 * pad) {
      const focus = this.runningLeaves().find((e) => e.visible) ?? this.nodes.get(String(this.root.id));
      tx = Math.min(pad - k * b.x0, Math.max(width - pad - k * b.x1, width / 2 - k * focus.x));
    }
    // A tree that fits in width but not in height starts at its top.
    const ty = pad + 30 - k * b.y0;
    const transform = d3.zoomIdentity.translate(tx, ty).scale(k);
    const sel = d3.select(this.svg);
    (animate ? sel.transition().duration(300) : sel).call(this.zoom.transform, transform);
    this.fitted = true;
  }

  /** Pan (and zoom in if the tree is shown tiny) so that the node is in the middle. */
  centre(id, animate = true) {
    const entry = this.nodes.get(id);
    if (!entry || !entry.visible) return;
    const { width, height } = this.svg.getBoundingClientRect();
    const current = d3.zoomTransform(this.svg);
    const k = Math.max(current.k, 0.9);
    const transform = d3.zoomIdentity.translate(width / 2 - k * entry.x, height / 2 - k * entry.y).scale(k);
    const sel = d3.select(this.svg);
    (animate ? sel.transition().duration(350) : sel).call(this.zoom.transform, transform);
    this.fitted = false;
  }

  // ---------------------------------------------------------------- interaction

  #entryOf(event) {
    const g = event.target.closest?.("g.node");
    return g ? this.nodes.get(g.getAttribute("data-node-id")) : null;
  }

  #onClick(event) {
    const entry = this.#entryOf(event);
    if (!entry) return;
    if (event.target.closest("g.toggle")) {
      this.toggle(entry.id);
      return;
    }
    this.select(entry.id);
    this.onSelect(entry.id);
  }

  #onHover(event) {
    const entry = this.#entryOf(event);
    if (!entry) return;
    // (kept, so a new frame can say the node's new status under a pointer that stays)
    this.hovered = { entry, event: { clientX: event.clientX, clientY: event.clientY } };
    this.#showTip(entry, event);
  }

  #showTip(entry, event) {
    const lines = [`${entry.data.name}`, `${entry.data.type} · id ${entry.id} · ${entry.status}`];
    if (entry.message) lines.push(entry.message);
    if (this.collapsed.has(entry.id)) lines.push(`${entry.size - 1} nodes hidden (click +)`);
    showTooltip(event, lines);
  }

  /** Collapse or expand a node's subtree (the user's choice: automatic folding keeps it). */
  toggle(id) {
    const entry = this.nodes.get(id);
    if (!entry || !entry.children.length) return;
    if (this.collapsed.has(id)) this.collapsed.delete(id);
    else this.collapsed.add(id);
    this.pinned.add(id);
    this.layout(true);
  }

  /** Unfold every subtree, and stop folding automatically. */
  expandAll() {
    this.auto = false;
    this.autoDecided = true;   // (a first view still to come keeps the user's choice)
    this.pinned.clear();
    if (!this.collapsed.size) return;
    this.collapsed.clear();
    this.layout(true);
  }

  /**
   * Fold every subtree but the root's and the running path's, and from then on fold and
   * unfold automatically as the running path moves; then fit the tree.
   */
  collapseAll() {
    this.auto = true;
    this.autoDecided = true;
    this.pinned.clear();
    this.#applyAutoFolds(true, true);
    this.fit();
  }

  /**
   * Automatic folding (a big tree, or "collapse all"): every composite but the root is
   * folded unless it is RUNNING (on the running path), except those the user folded or
   * unfolded. Called on each frame: the running path unfolds as it moves, and what it
   * left folds again. A fitted view is fitted again.
   */
  #applyAutoFolds(animate = true, force = false) {
    if (!this.auto) return;
    const rootId = String(this.root.id);
    let changed = false;
    for (const entry of this.nodes.values()) {
      if (!entry.children.length || entry.id === rootId || this.pinned.has(entry.id)) continue;
      const fold = entry.status !== "RUNNING";
      if (fold === this.collapsed.has(entry.id)) continue;
      if (fold) this.collapsed.add(entry.id);
      else this.collapsed.delete(entry.id);
      changed = true;
    }
    if (!changed && !force) return;
    // A subtree cycling fast (a repeat of short steps) would re-lay the tree out on every
    // frame: at most every AUTO_LAYOUT_MS, the last change drawn when that comes due.
    const wait = force ? 0 : this.autoLaidAt + AUTO_LAYOUT_MS - performance.now();
    if (wait > 0) {
      this.autoTimer ??= setTimeout(() => {
        this.autoTimer = null;
        this.#autoLayout(animate);
      }, wait);
      return;
    }
    this.#autoLayout(animate, force);
  }

  #autoLayout(animate, force = false) {
    clearTimeout(this.autoTimer);  // (a forced layout draws what a held-back one would)
    this.autoTimer = null;
    this.autoLaidAt = performance.now();
    this.layout(animate);
    if (this.fitted && !force) this.fit(animate);
  }

  /** Expand every collapsed ancestor of a node (kept open); true if anything changed. */
  reveal(id) {
    let changed = false;
    for (let p = this.nodes.get(id)?.parent; p; p = p.parent) {
      if (this.collapsed.delete(p.id)) {
        this.pinned.add(p.id);
        changed = true;
      }
    }
    return changed;
  }

  select(id) {
    if (this.selected) this.nodes.get(this.selected)?.g.classList.remove("selected");
    this.selected = id;
    const entry = this.nodes.get(id);
    if (entry) entry.g.classList.add("selected");
  }

  /** Select a node from outside (a breakpoint hit): reveal, select and centre it. */
  focus(id) {
    if (!this.nodes.has(id)) return;
    if (this.reveal(id)) this.layout(false);
    this.select(id);
    this.centre(id);
  }

  // ---------------------------------------------------------------- search

  /** Highlight the nodes matching the query; returns how many match. */
  search(query) {
    const q = query.trim().toLowerCase();
    for (const entry of this.matches) entry.g.classList.remove("match", "current-match");
    this.matches = [];
    this.matchIndex = -1;
    this.svg.classList.toggle("searching", q.length > 0);
    if (!q) return 0;
    const idLike = /^[0-9.]+$/.test(q);
    let changed = false;
    for (const entry of this.nodes.values()) {
      const byId = entry.id === q || (idLike && q.includes(".") && entry.id.startsWith(q));
      if (byId || entry.lower.includes(q)) {
        this.matches.push(entry);
        entry.g.classList.add("match");
        if (this.reveal(entry.id)) changed = true;
      }
    }
    if (changed) this.layout(false);
    if (this.matches.length) this.nextMatch();
    return this.matches.length;
  }

  /** Centre the next match (Enter in the search box). */
  nextMatch(step = 1) {
    if (!this.matches.length) return null;
    this.matches[this.matchIndex]?.g.classList.remove("current-match");
    const n = this.matches.length;
    this.matchIndex = (this.matchIndex + step + n) % n;
    const entry = this.matches[this.matchIndex];
    entry.g.classList.add("current-match");
    this.centre(entry.id);
    return { index: this.matchIndex, count: n, id: entry.id };
  }

  // ---------------------------------------------------------------- per-frame updates

  /** Apply a frame's node statuses: only the changed attributes are touched. */
  updateStatuses(frameNodes) {
    for (const [id, info] of Object.entries(frameNodes ?? {})) {
      const entry = this.nodes.get(id);
      if (!entry) continue;
      const status = info.status ?? "IDLE";
      if (status !== entry.status) {
        entry.status = status;
        entry.g.setAttribute("data-status", status);
        if (entry.link) entry.link.setAttribute("data-status", status);
      }
      const ticked = info.ticked ? "true" : "false";
      if (ticked !== entry.ticked) {
        entry.ticked = ticked;
        entry.g.setAttribute("data-ticked", ticked);
      }
      entry.message = info.message ?? "";
    }
    this.#applyAutoFolds();
    this.#updateHiddenStatus();
    if (this.hovered) this.#showTip(this.hovered.entry, this.hovered.event);
  }

  /** A collapsed node tells whether something inside it runs or failed. */
  #updateHiddenStatus() {
    for (const id of this.nodes.keys()) {
      const entry = this.nodes.get(id);
      if (!entry.children.length) continue;
      let inner = "";
      if (this.collapsed.has(id)) {
        const stack = [...entry.children];
        while (stack.length && inner !== "RUNNING") {
          const child = stack.pop();
          if (child.status === "RUNNING") inner = "RUNNING";
          else if (child.status === "FAILURE") inner = "FAILURE";
          stack.push(...child.children);
        }
      }
      if ((entry.innerStatus ?? "") !== inner) {
        entry.innerStatus = inner;
        if (inner) entry.g.setAttribute("data-inner-status", inner);
        else entry.g.removeAttribute("data-inner-status");
      }
    }
  }

  /** Show a red dot on the nodes with a breakpoint. */
  setBreakpoints(list) {
    const ids = new Set((list ?? []).map((b) => String(b.node)));
    for (const id of new Set([...ids, ...this.breakpoints])) {
      const entry = this.nodes.get(id);
      if (!entry) continue;
      if (ids.has(id)) entry.g.setAttribute("data-break", "true");
      else entry.g.removeAttribute("data-break");
    }
    this.breakpoints = ids;
  }

  nameOf(id) {
    return this.nodes.get(id)?.data.name ?? id;
  }

  nodeData(id) {
    return this.nodes.get(id)?.data ?? null;
  }
}
