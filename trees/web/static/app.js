// limbtree web debugger: the page's entry point. It loads the run (/api/run), builds the
// views once, then shows frames: pushed by the live WebSocket (when following the live run)
// or fetched from /api/frame/{tick} when the user scrubs the timeline.

import { TOKEN, ApiError, getRun, getFrame, getTerrain, postControl, FrameFetcher, LiveSocket } from "./js/api.js";
import { TreeView } from "./js/tree.js";
import { NodePanel } from "./js/nodepanel.js";
import { LimbsTable } from "./js/limbs.js";
import { Timeline } from "./js/timeline.js";
import { FRAME_MS, LIMB_COLOURS, toast, showBanner, hideBanner } from "./js/util.js";

const $ = (id) => document.getElementById(id);

/** Everything the page knows about the run. */
const app = {
  mode: "replay",
  header: null,
  ticks: 0,
  tLast: 0,
  end: null,
  damage: null,         // why a recorded log stops early (the ticks before it are shown)
  writing: false,       // a record a run is still writing (its ticks so far are shown)
  allowed: true,        // whether this page has the control token (a live run's)
  control: false,
  paused: false,
  breakpoints: [],
  hit: null,
  hitKey: "",
  gate: null,
  gateTicks: new Map(), // gate node id -> the tick it last asked in (its `gate` event's)
  shown: null,          // the frame on screen
  latest: null,         // the newest frame pushed by the live socket
  liveRenderQueued: false,
  skeletonTimer: null,  // asking for the shown tick again until its frame has skeletons
  dragging: false,      // the pointer holds the scrubber
  socket: null,
  everConnected: false,
  updates: 0,           // live socket updates taken (a control reply older than one is dropped)
};

const live = () => app.mode === "live";
const following = () => live() && $("follow").checked;

let tree, panel, limbs, view3d, timeline, fetcher;

// ---------------------------------------------------------------- start

/** /api/run, retried while the server says the run has not started yet (503). */
async function loadRun() {
  for (let attempt = 0; ; attempt++) {
    try {
      const run = await getRun();
      hideBanner("info");
      return run;
    } catch (err) {
      const waiting = err.status === 503 || err.status === undefined;   // undefined: network
      if (!waiting || attempt > 600) throw err;
      $("run-state").textContent = "waiting for the run…";
      showBanner(`Waiting for the run to start: ${err.message}`, "info");
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
}

async function start() {
  let run;
  try {
    run = await loadRun();
  } catch (err) {
    const hint = err.status === 403 ? " (open the URL printed by limbtree, with its ?token=)" : "";
    showBanner(`Cannot load the run: ${err.message}${hint}`, "FAILURE");
    $("run-state").textContent = "no run";
    return;
  }
  app.mode = run.mode === "live" ? "live" : "replay";
  app.header = run.header ?? {};
  document.body.dataset.mode = app.mode;
  showHeader(app.header);
  buildViews(app.header);
  applyRun(run);
  loadTerrain(app.header);

  if (app.ticks === 0) requestAnimationFrame(() => tree.initialView());
  if (live()) {
    $("follow").checked = true;
    if (app.ticks > 0) showLiveTick(app.ticks - 1);
    connect();
  } else {
    $("follow").checked = false;
    const param = new URLSearchParams(location.search).get("tick");
    const asked = param === null || param === "" ? NaN : Number(param);
    const tick = Number.isInteger(asked) && asked >= 0 && asked < app.ticks ? asked : Math.max(0, app.ticks - 1);
    timeline.value = tick;
    if (app.ticks > 0) fetcher.request(tick);
  }
}

function showHeader(header) {
  const mission = header.mission ?? "mission";
  $("mission-name").textContent = mission;
  $("mission-name").title = [
    header.mission_file, `seed ${header.seed ?? "–"}`, `clock ${header.clock ?? "–"}`,
    `${header.rate_hz ?? "–"} Hz`, header.parameters ? `parameters ${JSON.stringify(header.parameters)}` : null,
  ].filter(Boolean).join("\n");
  $("mode").textContent = app.mode;
  $("mode").dataset.mode = app.mode;
  document.title = `${mission} · limbtree ${app.mode}`;
  $("follow-label").hidden = !live();
  $("controls").hidden = !live();
}

/** The limbs in the header's order (robots -> limbs). */
function limbNames(header) {
  const names = [];
  for (const robot of Object.values(header.robots ?? {})) names.push(...Object.keys(robot.limbs ?? {}));
  return names;
}

function buildViews(header) {
  const names = limbNames(header);
  const colourOf = (name) => {
    let i = names.indexOf(name);
    if (i < 0) {
      names.push(name);
      i = names.length - 1;
    }
    return LIMB_COLOURS[i % LIMB_COLOURS.length];
  };
  tree = new TreeView($("tree"), header.tree ?? { id: "0", name: "(no tree)", type: "", children: [] }, {
    onSelect: (id) => panel.open(id, tree.nodeData(id)),
  });
  panel = new NodePanel({
    live: () => live() && !app.end,
    control: () => app.control,
    totalTicks: () => app.ticks,
    onBreak: (id, on, set) => control({ op: set ? "break" : "unbreak", node: id, on }),
    // (a live run's server sends the watched node's answer with each frame it sends, and
    // with the run's last update)
    watch: (id) => app.socket?.send({ watch: id }),
    pushed: () => following() && !!app.socket?.open,
    loadFailed: (err) => {
      if (!serverGone(err)) return null;
      sayServerGone();
      return `cannot load: limbtree has stopped serving this ${live() ? "run" : "record"} (${err.message})`;
    },
  });
  limbs = new LimbsTable($("limbs"), names, colourOf);
  view3d = lazyView3D($("view3d"), colourOf);
  timeline = new Timeline({ onScrub: scrubTo, onPick: (tick) => { timeline.value = tick; scrubTo(tick); } });
  fetcher = new FrameFetcher(
    (frame) => {
      // A scrub answered after the user went back to following live: drop it.
      if (!following()) showFrame(frame);
    },
    (err) => {
      if (app.shown) timeline.value = app.shown.tick;   // (the scrubber says what is shown)
      if (serverGone(err)) sayServerGone();
      else toast(`frame: ${err.message}`);
    },
  );
  wireControls();
  // For the console and for automated checks (read-only use intended).
  window.limbtree = { app, tree, panel, limbs, view3d, timeline };
}

/**
 * The 3D view, loaded in the background: three.js is 2 MB of script, and the tree and the
 * controls should not wait for it. Frames shown meanwhile wait for it (the last one only),
 * and so does the terrain.
 */
function lazyView3D(container, colourOf) {
  let real = null;
  let pending = null;
  let pendingTerrain = null;
  import("./js/view3d.js")
    .then(({ View3D }) => {
      real = new View3D(container, colourOf);
      window.limbtree.view3d = real;
      if (pendingTerrain) real.setTerrain(pendingTerrain);
      if (pending) real.update(pending);
    })
    .catch((err) => toast(`3D view unavailable: ${err.message}`));
  return {
    update(frame, inFrame = false) {
      if (real) real.update(frame, inFrame);
      else pending = frame;
    },
    setTerrain(patch) {
      if (real) real.setTerrain(patch);
      else pendingTerrain = patch;
    },
    fit() {
      real?.fit();
    },
    holdWhileScrubbing() {
      real?.holdWhileScrubbing();
    },
    software() {
      return real?.software ?? false;
    },
  };
}

/** The ground under the limbs, for a run whose mission has a terrain (seed 004). */
async function loadTerrain(header) {
  if (!header.world?.terrain) return;
  try {
    view3d.setTerrain(await getTerrain());
  } catch (err) {
    toast(`terrain: ${err.message}`);
  }
}

/** Apply a /api/run reply (at start, and again after a reconnection). */
function applyRun(run) {
  setTicks(run.ticks ?? 0, run.t_last ?? 0);
  addEvents(run.events ?? []);
  app.end = run.end ?? null;
  app.damage = run.damage ?? null;   // a record whose log is damaged part way
  app.writing = !!run.writing;       // a record a run is still writing: its ticks so far
  app.allowed = run.allowed !== false;  // this page has the control token
  applyState(run);
}

function setTicks(ticks, tLast) {
  app.ticks = Math.max(app.ticks, ticks);
  app.tLast = tLast;
  timeline.setTicks(app.ticks);
}

// ---------------------------------------------------------------- frames

/**
 * Draw a frame everywhere. Only attributes change: no scene rebuild, and no layout but a
 * big tree's automatic folding (at most twice a second, tree.js AUTO_LAYOUT_MS).
 * `inFrame`: called from an animation frame's callback (the 3D view draws in it too).
 */
function showFrame(frame, inFrame = false) {
  if (!frame) return;
  const first = !app.shown;
  app.shown = frame;
  tree.updateStatuses(frame.nodes);
  // The first view is chosen once the statuses are known (it may centre the running node).
  if (first) tree.initialView();
  limbs.update(frame);
  view3d.update(frame, inFrame);
  panel.setFrame(frame);
  if (!app.dragging || following()) timeline.value = frame.tick;
  $("tick-label").textContent = `tick ${frame.tick} · t = ${Number(frame.t).toFixed(2)} s`;
  $("tick-label").dataset.behind = live() && !following() && frame.tick < app.ticks - 1 ? "true" : "false";
  $("tick-label").title = live() ? `live: tick ${app.ticks - 1}` : `${app.ticks} ticks recorded`;
  if (frame.skeletons === "loading") awaitSkeletons();
}

/**
 * The server is still making the limbs' skeletons (it answers the page first): fetch the
 * tick shown again until a frame has them. A live run's next frame brings them anyway.
 */
const SKELETON_POLL_MS = 400;
function awaitSkeletons() {
  if (app.skeletonTimer || following()) return;
  app.skeletonTimer = setTimeout(() => {
    app.skeletonTimer = null;
    if (app.shown?.skeletons !== "loading" || following()) return;
    // A scrub in flight brings a frame of its own (and asks again if it has none).
    if (!fetcher.busy && fetcher.wanted === null) fetcher.request(app.shown.tick);
  }, SKELETON_POLL_MS);
}

/** The user moved the scrubber (or clicked a mark): stop following, fetch that tick. */
function scrubTo(tick) {
  if (following()) $("follow").checked = false;
  view3d.holdWhileScrubbing();
  fetcher.request(Math.max(0, Math.min(tick, app.ticks - 1)));
}

/**
 * A following page asks the server for each live frame when it is ready to draw it (the
 * server sends frames to no one else): it draws the frame on the next animation frame,
 * measures what the drawing cost (script, layout and paint, less the display frame the
 * browser waits for), and asks for the next one once that cost is no more than LIVE_SHARE
 * of the time since, and at most 10 times a second. A software-rendered page (no GPU: a
 * headless browser, a remote desktop, a virtual machine) cannot time its own cost: its
 * raster and compositing run in other threads and processes, on the cores the run may be
 * using, and cost far more than the page times. Measured (headless Chromium 156 following
 * the robustness run on two cores): about 30 ms of CPU per frame in its renderer and GPU
 * processes, for half a millisecond timed here (a third of it the 3D view's draw, whatever
 * its size or number of meshes: SwiftShader's cost per frame presented). Such a page asks
 * for a frame every LIVE_MIN_SOFTWARE_MS, which keeps it near LIVE_SHARE of one core; every
 * LIVE_SOFTWARE_LOCAL_MS when it was served from a loopback address, on the run's own
 * machine, where each frame is CPU taken from the run it watches.
 */
const LIVE_SHARE = 0.05;
const LIVE_MIN_MS = 100;
const LIVE_MIN_SOFTWARE_MS = 600;
const LIVE_SOFTWARE_LOCAL_MS = 1000;
const LOOPBACK = /^(127\.|localhost$|\[::1\]$)/.test(location.hostname);
const softwarePace = () => (LOOPBACK ? LIVE_SOFTWARE_LOCAL_MS : LIVE_MIN_SOFTWARE_MS);
function queueLiveRender() {
  if (app.liveRenderQueued) return;
  app.liveRenderQueued = true;
  requestAnimationFrame(() => {
    app.liveRenderQueued = false;
    // A tick's frame never changes (but for the skeletons, once the server has them).
    const fresh = app.latest.tick !== app.shown?.tick || app.latest.skeletons !== app.shown?.skeletons;
    if (!(following() && app.latest !== app.shown && fresh)) {
      askForFrame();
      return;
    }
    const began = performance.now();
    showFrame(app.latest, true);
    if (view3d.software()) {
      // Its cost cannot be timed here (above): no frame more to time it.
      setTimeout(askForFrame, softwarePace());
      return;
    }
    // The next animation frame comes once this one is laid out and painted.
    requestAnimationFrame(() => {
      const took = Math.max(0, performance.now() - began - FRAME_MS);
      const least = view3d.software() ? softwarePace() : LIVE_MIN_MS;
      const due = began + Math.max(least, took / LIVE_SHARE);
      setTimeout(askForFrame, Math.max(0, due - performance.now()));
    });
  });
}

/** Ask the server for the live run's next new frame (it comes when there is one). */
function askForFrame() {
  if (following() && app.socket) app.socket.send({ want: "frame" });
}

// ---------------------------------------------------------------- run state

/** Control fields (from /api/run, a socket update or a control reply). */
function applyState(s) {
  // The live socket repeats these several times a second: touch the page only on a change.
  const key = JSON.stringify([s.control, s.paused, s.breakpoints, s.gate, s.hit, app.end]);
  if (key === app.stateKey) return;
  app.stateKey = key;
  if ("control" in s) app.control = !!s.control && !app.end && app.allowed;
  if ("paused" in s) app.paused = !!s.paused;
  if ("breakpoints" in s) {
    app.breakpoints = s.breakpoints ?? [];
    tree.setBreakpoints(app.breakpoints);
    panel.setBreakpoints(app.breakpoints);
  }
  if ("gate" in s) showGate(s.gate ?? null);
  if ("hit" in s) showHit(s.hit ?? null);
  renderRunState();
}

function renderRunState() {
  const state = $("run-state");
  let key;
  let text;
  if (app.end) {
    key = app.end.outcome ?? "FAILURE";
    text = key;
    state.title = app.end.failure ?? "";
  } else if (!live() && app.writing) {
    key = "incomplete";   // a record a run is still writing
    text = "record so far";
    state.title = "a run is still writing this record: view it again for its later ticks";
  } else if (!live()) {
    key = "incomplete";   // a record without an end: a run that was killed
    text = "incomplete record";
    state.title = "the record has no end: the run was killed or crashed";
  } else {
    key = app.paused ? "paused" : "running";
    text = app.paused ? "paused" : "running";
    state.title = "";
  }
  if (app.damage && !live()) {
    key = "incomplete";
    text = app.end ? `${text}, log damaged` : "damaged record";
    state.title = `${app.damage}: the page shows the ticks before it`;
  }
  state.dataset.state = key;
  state.textContent = text;
  // A live page opened without the token watches only: its controls say why they are off.
  const why = live() && !app.end && !app.allowed
    ? "control needs the token: open the URL limbtree printed (with its ?token=)" : "";
  for (const id of ["pause", "resume", "step", "abort"]) {
    const button = $(id);
    button.dataset.help ??= button.title;   // (its own title, kept for when control is on)
    button.disabled = !app.control;
    button.title = why || button.dataset.help;
  }
  if (!app.control) disarmAbort();
  // The button that does nothing now looks muted (it stays clickable).
  $("pause").classList.toggle("inactive", app.paused);
  $("resume").classList.toggle("inactive", !app.paused);
  panel.setControl();
  for (const id of ["gate-yes", "gate-no"]) $(id).disabled = !app.control;
}

function showGate(gate) {
  const shown = app.gate;
  app.gate = gate;
  const box = $("gate");
  box.hidden = !gate;
  if (!gate) return;
  $("gate-prompt").textContent = gate.prompt ?? "?";
  $("gate-node").textContent = `node ${tree.nameOf(String(gate.node))} (${gate.node})`;
  // The same gate comes again with each other change of the controls (a breakpoint, a
  // pause, the run's end): the view stays as the user has it (and the node is not fetched
  // again, from a server that may be stopping).
  const same = shown && String(shown.node) === String(gate.node) && shown.prompt === gate.prompt;
  if (following() && !same) {   // the gate's node, centred (the card is in a corner) and open
    const id = String(gate.node);
    tree.focus(id);
    panel.open(id, tree.nodeData(id));
    // The run waits at the gate's tick; the page may have drawn its last frame up to a
    // second before (it asks for frames at its own pace), when the gate was not running
    // yet: fetch that tick rather than show the question over an older tree.
    const tick = app.gateTicks.get(id) ?? app.ticks - 1;
    if (tick >= 0) showLiveTick(tick);
  }
}

/**
 * A breakpoint paused the run: show the tick it fired in (even if the user had scrubbed
 * away), then select and centre its node and say so in the banner. A following page may
 * have drawn its last frame a while before (it asks for frames at its own pace), so the
 * paused tick is fetched rather than waited for.
 */
async function showHit(hit) {
  const key = hit ? `${hit.node}|${hit.on}|${hit.tick}` : "";
  if (key === app.hitKey) return;
  app.hitKey = key;
  app.hit = hit;
  if (!hit) {
    hideBanner("pause");
    return;
  }
  const id = String(hit.node);
  if (live()) {
    const wasBack = !following();
    $("follow").checked = true;
    fetcher.cancel();
    await showLiveTick(hit.tick);
    // Frames stopped coming while the page looked back: ask for the next ones (a step's).
    if (wasBack) askForFrame();
    if (app.hitKey !== key) return;   // (stepped or resumed meanwhile)
  }
  tree.focus(id);
  panel.open(id, tree.nodeData(id));
  showBanner(`paused at breakpoint: ${tree.nameOf(id)} (${hit.on}), tick ${hit.tick}`, "pause");
}

/** Show live tick `tick` (or a later one), fetching it if the page has not got it yet. */
async function showLiveTick(tick) {
  for (let tries = 0; !(app.latest?.tick >= tick); tries++) {
    try {
      const frame = await getFrame(tick);
      if (!(app.latest?.tick >= frame.tick)) app.latest = frame;
    } catch (err) {
      // The server may not have taken that tick from the run yet: a moment later it has.
      if (tries >= 30) {
        toast(`frame: ${err.message}`);
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  if (following()) showFrame(app.latest);
}

function onEnd(end, summary) {
  app.end = end ?? { outcome: "FAILURE", failure: null };
  app.control = false;
  app.summary = summary ?? null;
  renderRunState();
  showGate(null);
  panel.ended();
  const outcome = app.end.outcome;
  const record = live() && app.end.record ? ` · its record: limbtree view ${app.end.record}` : "";
  showBanner(`Run ended: ${outcome}${app.end.failure ? ` — ${app.end.failure}` : ""}${record}`, outcome);
  if (app.socket) app.socket.close();
  setConn("open");
  // No request here: `limbtree run` stops serving right after its run ends, and the last
  // update (sent just before `end`) already carried the final tick, events and the watched
  // node (the panel asks only if it is still short of them: panel.ended()).
}

/** Whether the page may have lost its server: limbtree run stops serving a live run's
 * page after the run (at once when its stdin is not a terminal), and a record's page loses
 * its server when `limbtree view` is stopped (Ctrl-C): a request that got no answer at all,
 * not an HTTP error (`err`: the failed request's error). */
function serverGone(err) {
  if (live()) return !!app.end;
  return !(err instanceof ApiError) && err?.name !== "AbortError";
}

/** Say so once, with where the record is, instead of a failed request's toast. */
function sayServerGone() {
  if (app.saidGone) return;
  app.saidGone = true;
  if (!live()) {
    showBanner(
      "limbtree view has stopped serving this record: the page keeps what it has shown;"
        + " run limbtree view on the record again to look further",
      "info",
    );
    return;
  }
  const record = app.end?.record;
  showBanner(
    "limbtree has stopped serving this run: the page keeps what it has shown"
      + (record ? `; open the record with limbtree view ${record}` : " (the run was not recorded)"),
    "info",
  );
}

// ---------------------------------------------------------------- live socket

function connect() {
  app.socket = new LiveSocket({
    onMessage: (msg) => {
      if (msg.type === "update") onUpdate(msg);
      else if (msg.type === "end") onEnd(msg.end, msg.summary);
    },
    onState: (state) => {
      if (state === "open") {
        // Events between the page's first /api/run and the socket's opening (or during a
        // disconnection) reach no update: catch up (the timeline drops repeats).
        resync();
        askForFrame();
        if (panel.id) app.socket.send({ watch: panel.id });
        app.everConnected = true;
      }
      setConn(state);
    },
  });
  app.socket.connect();
}

/** Back after a disconnection: catch up with what the socket did not tell. */
function resync() {
  getRun().then((run) => {
    applyRun(run);
    if (run.end) onEnd(run.end, run.summary);
  }).catch(() => {});
}

/** Take the run's new events (a gate's tick kept for showGate). */
function addEvents(events) {
  timeline.addEvents(events);
  for (const e of events) if (e.kind === "gate") app.gateTicks.set(String(e.node), e.tick);
}

function onUpdate(msg) {
  app.updates++;
  setTicks(msg.ticks ?? app.ticks, msg.t_last ?? app.tLast);
  addEvents(msg.events ?? []);
  applyState(msg);
  if (msg.frame) {
    app.latest = msg.frame;
    if (following()) queueLiveRender();
  }
  if (msg.node) panel.take(msg.node);   // (the run's last update: the watched node as it ended)
}

function setConn(state) {
  const conn = $("conn");
  const down = state !== "open" && app.everConnected && !app.end;
  conn.hidden = !down;
  conn.textContent = state === "connecting" ? "reconnecting…" : "disconnected";
  document.body.dataset.conn = down ? "disconnected" : "connected";
}

// ---------------------------------------------------------------- controls

async function control(body) {
  const updates = app.updates;
  try {
    const reply = await postControl(body);
    // The reply says the controls as the run took the request; a socket update that came
    // meanwhile may be newer (the run's controls reach the server by another pipe), and
    // the socket sends any change at once: an older reply would show an answered gate, or
    // a pause resumed, again. Once the run is over there is nothing to show.
    if (app.updates === updates && !app.end) applyState(reply);
  } catch (err) {
    const what = body.op === "answer" ? "answer" : body.op;
    const prefix = err.status === 403 ? "not allowed" : err.status === 409 ? "not possible now" : "failed";
    toast(`${what}: ${prefix}: ${err.message}`);
  }
}

/**
 * Abort ends the run for good: the first click arms the button ("Abort? again to confirm")
 * for ABORT_ARM_MS, and only a second click within that time aborts.
 */
const ABORT_ARM_MS = 4000;
function abortClicked() {
  if (!app.control) return;
  const button = $("abort");
  if (button.dataset.armed === "true") {
    disarmAbort();
    control({ op: "abort" });
    return;
  }
  button.dataset.armed = "true";
  button.textContent = "■ Abort? again to confirm";
  app.abortTimer = setTimeout(disarmAbort, ABORT_ARM_MS);
}

function disarmAbort() {
  clearTimeout(app.abortTimer);
  const button = $("abort");
  if (button.dataset.armed !== "true") return;
  delete button.dataset.armed;
  button.textContent = "■ Abort";
}

function togglePause() {
  if (!app.control) return;
  control({ op: app.paused ? "resume" : "pause" });
}

function step() {
  if (app.control) control({ op: "step" });
}

/** Scrub by one tick (keyboard). */
function nudge(delta) {
  // From the tick the page is going to: keys pressed faster than the frames come (a key
  // held down) each move one tick more, not one tick from the frame still on screen.
  const base = (following() ? null : fetcher.heading) ?? app.shown?.tick ?? timeline.value;
  const tick = Math.max(0, Math.min(app.ticks - 1, base + delta));
  timeline.value = tick;
  scrubTo(tick);
}

function wireControls() {
  $("pause").addEventListener("click", () => control({ op: "pause" }));
  $("resume").addEventListener("click", () => control({ op: "resume" }));
  $("step").addEventListener("click", step);
  $("abort").addEventListener("click", abortClicked);
  $("gate-yes").addEventListener("click", () => app.gate && control({ op: "answer", node: app.gate.node, answer: true }));
  $("gate-no").addEventListener("click", () => app.gate && control({ op: "answer", node: app.gate.node, answer: false }));
  $("fit").addEventListener("click", () => tree.fit());
  $("collapse-all").addEventListener("click", () => tree.collapseAll());
  $("expand-all").addEventListener("click", () => tree.expandAll());
  $("fit3d").addEventListener("click", () => view3d.fit());
  $("goto-running").addEventListener("click", () => {
    if (!tree.gotoRunning()) toast("no node is running at this tick", "info");
  });
  wireSplitter();
  $("banner-close").addEventListener("click", () => hideBanner());

  $("follow").addEventListener("change", () => {
    if (!following()) return;
    fetcher.cancel();
    // Frames stopped coming while the page did not follow: the newest, then the next ones.
    if (app.ticks > 0) showLiveTick(app.ticks - 1);
    askForFrame();
  });

  const input = $("timeline");
  input.addEventListener("pointerdown", () => { app.dragging = true; });
  window.addEventListener("pointerup", () => { app.dragging = false; });

  wireSearch();
  document.addEventListener("keydown", onKey);
}

/** The bar between the node panel and the limbs: drag to share the column. */
function wireSplitter() {
  const bar = $("side-split");
  const side = $("side");
  const saved = Number(localStorage.getItem("limbtree.limbsHeight"));
  if (saved > 0) side.style.setProperty("--limbs-h", `${saved}px`);
  bar.addEventListener("pointerdown", (down) => {
    down.preventDefault();
    bar.setPointerCapture(down.pointerId);
    bar.classList.add("dragging");
    const move = (event) => {
      const rect = side.getBoundingClientRect();
      const height = Math.round(Math.min(rect.height - 120, Math.max(170, rect.bottom - event.clientY)));
      side.style.setProperty("--limbs-h", `${height}px`);
      localStorage.setItem("limbtree.limbsHeight", String(height));
    };
    const up = () => {
      bar.classList.remove("dragging");
      bar.removeEventListener("pointermove", move);
      bar.removeEventListener("pointerup", up);
    };
    bar.addEventListener("pointermove", move);
    bar.addEventListener("pointerup", up);
  });
}

/** The search box's placeholders, longest first: the longest that fits the box is shown. */
const SEARCH_PLACEHOLDERS = ["Search nodes (name or id)", "Search nodes", "Search"];

/** Show the longest placeholder the search box has room for (never one cut off). */
function fitSearchPlaceholder(search) {
  const style = getComputedStyle(search);
  const room = search.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  if (!(room > 0)) return;
  const ctx = (fitSearchPlaceholder.ctx ??= document.createElement("canvas").getContext("2d"));
  ctx.font = style.font;
  const fits = SEARCH_PLACEHOLDERS.find((text) => ctx.measureText(text).width <= room);
  const placeholder = fits ?? SEARCH_PLACEHOLDERS[SEARCH_PLACEHOLDERS.length - 1];
  if (search.placeholder !== placeholder) search.placeholder = placeholder;
}

function wireSearch() {
  const search = $("search");
  const count = $("search-count");
  new ResizeObserver(() => fitSearchPlaceholder(search)).observe(search);
  document.fonts?.ready.then(() => fitSearchPlaceholder(search));
  let timer = null;
  let applied = "";
  const run = () => {
    clearTimeout(timer);
    applied = search.value;
    const n = tree.search(search.value);
    count.textContent = search.value.trim() ? (n ? `1/${n}` : "no match") : "";
  };
  search.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(run, 120);
  });
  search.addEventListener("keydown", (event) => {
    if (event.key === "Enter") {
      // Enter applies a query still being typed, then cycles through the matches.
      event.preventDefault();
      if (search.value !== applied) {
        run();
        return;
      }
      const at = tree.nextMatch(event.shiftKey ? -1 : 1);
      if (at) count.textContent = `${at.index + 1}/${at.count}`;
    } else if (event.key === "Escape") {
      search.value = "";
      run();
      search.blur();
    }
  });
}

function onKey(event) {
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  const target = event.target;
  // Typing in a text field: the keys are text. A focused range handles its own arrows.
  if (target.closest?.("textarea, select, [contenteditable]")) return;
  if (target.matches?.("input:not([type=checkbox]):not([type=range])")) return;
  if (target.matches?.("input[type=range]") && event.key.startsWith("Arrow")) return;
  if (event.key === "Enter") return;
  // Space is pause/resume everywhere else, even on a focused button or checkbox (the
  // debugger convention); Enter still presses a focused button.
  switch (event.key) {
    case " ":
      if (live()) {
        event.preventDefault();
        togglePause();
      }
      break;
    case "s":
      if (live()) step();
      break;
    case "ArrowRight":
      event.preventDefault();
      // Stepping the run is for a page that follows it; one looking back (after ← or a
      // scrub) moves through what it has, as ← does, and leaves the run alone.
      if (following() && app.control) step();
      else nudge(1);
      break;
    case "ArrowLeft":
      event.preventDefault();
      nudge(-1);
      break;
    case "f":
      tree.fit();
      break;
    default:
  }
}

// A fetch that needs the token but the page was opened without one says so early.
if (!TOKEN) document.body.dataset.token = "none";

start();
