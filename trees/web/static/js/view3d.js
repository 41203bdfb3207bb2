// The 3D view (three.js): limbs' skeletons, commanded ghosts, end-effector frames and the
// target frames skills drive them to, and the terrain under them when the run has one
// (seed 004).
//
// The scene is built once per limb; a frame only moves objects (positions, quaternions,
// scales). Rendering happens on demand: after a frame, a camera move or a resize, never in
// a continuous loop.

import * as THREE from "three";
import { OrbitControls } from "/static/vendor/three/addons/controls/OrbitControls.js";
import { FRAME_MS } from "./util.js";
import { RED_FLAGS } from "./limbs.js";

const LINK_RADIUS = 0.014;     // skeleton links [m]
const JOINT_RADIUS = 0.024;    // joint spheres [m]
const COMMAND_TRIAD = 0.09;    // command pose axes [m]
const STATE_TRIAD = 0.055;     // state pose axes [m]
const TARGET_TRIAD = 0.07;     // target pose axes [m], inside a ring of this radius
const DASH = 0.04;             // the dashed line to a target: dashes [m] ...
const GAP = 0.025;             // ... and gaps [m]
const RENDER_SHARE = 0.03;     // paced draws take at most this share of the time
// Paced draws of a software driver come at most this often [ms]: under half the live page's
// pace for such a driver (app.js LIVE_MIN_SOFTWARE_MS), so that a draw held back once (by
// the user's own) never holds back the next live frame's.
const SOFTWARE_DRAW_MS = 250;
const Y_AXIS = new THREE.Vector3(0, 1, 0);
const GROUND_LOW = 0x4f4538;   // the terrain's colour in its hollows (a muted brown) ...
const GROUND_HIGH = 0xc4b79e;  // ... and on its tops (a pale dust)

/** A chain of cylinders and spheres through a polyline; grows its pool of meshes as needed. */
class Polyline {
  constructor(parent, material, geometries) {
    this.group = new THREE.Group();
    parent.add(this.group);
    this.material = material;
    this.geometries = geometries;
    this.links = [];
    this.joints = [];
  }

  #mesh(pool, geometry) {
    const mesh = new THREE.Mesh(geometry, this.material);
    this.group.add(mesh);
    pool.push(mesh);
    return mesh;
  }

  /** Move the meshes onto the points ([[x,y,z], ...] or null to hide); `thick` scales radii. */
  update(points, thick = 1) {
    const n = points ? points.length : 0;
    this.group.visible = n > 0;
    const a = new THREE.Vector3();
    const b = new THREE.Vector3();
    for (let i = 0; i < Math.max(n, this.joints.length); i++) {
      const joint = this.joints[i] ?? (i < n ? this.#mesh(this.joints, this.geometries.sphere) : null);
      if (!joint) continue;
      joint.visible = i < n;
      if (i < n) {
        joint.position.set(points[i][0], points[i][1], points[i][2]);
        joint.scale.setScalar(thick);
      }
    }
    for (let i = 0; i < Math.max(n - 1, this.links.length); i++) {
      const link = this.links[i] ?? (i < n - 1 ? this.#mesh(this.links, this.geometries.cylinder) : null);
      if (!link) continue;
      if (i >= n - 1) {
        link.visible = false;
        continue;
      }
      a.fromArray(points[i]);
      b.fromArray(points[i + 1]);
      const length = a.distanceTo(b);
      link.visible = length > 1e-6;
      if (!link.visible) continue;
      link.position.copy(a).add(b).multiplyScalar(0.5);
      link.quaternion.setFromUnitVectors(Y_AXIS, b.sub(a).divideScalar(length));
      link.scale.set(thick, length, thick);
    }
  }
}

function pose(object, p) {
  object.visible = Array.isArray(p) && p.length >= 7;
  if (!object.visible) return;
  object.position.set(p[0], p[1], p[2]);
  object.quaternion.set(p[3], p[4], p[5], p[6]);
}

export class View3D {
  /**
   * @param {HTMLElement} container
   * @param {(name: string) => string} colourOf  the limb's colour
   */
  constructor(container, colourOf) {
    this.container = container;
    this.colourOf = colourOf;
    this.limbs = new Map();
    this.bases = new Map();
    this.thick = 1;          // radii and triads scale with the scene (set by fit on the first frame)
    this.fitted = false;
    this.fittedSkeletons = false;  // whether the fit saw skeletons (they may come later)
    // The camera follows the limbs (fitted again when one leaves the view) until the user
    // orbits, zooms or pans by hand; `fit` fits and follows again. #view3d[data-follow] is
    // "auto" or "manual", [data-out-of-view] "true" while a limb is out of a manual view.
    this.manual = false;
    this.handling = false;   // between the controls' start and end: the user's own move
    this.terrain = null;     // the ground's mesh, when the run has a terrain
    this.pending = false;
    this.deferred = null;    // a paced draw waiting for its turn
    this.renderDue = 0;      // when a paced draw may come (performance.now() ms)
    this.ok = this.#init();
  }

  #init() {
    // A software driver draws without multisampling and with coarser spheres and cylinders:
    // in SwiftShader, antialiasing alone doubles a draw's CPU. Ask the driver before making
    // the renderer, since antialiasing is fixed when its context is made.
    const software = probeSoftwareGL();
    try {
      this.renderer = new THREE.WebGLRenderer({ antialias: !software });
    } catch (err) {
      this.container.append(Object.assign(document.createElement("div"), {
        className: "muted no-webgl", textContent: `3D view unavailable (${err.message})`,
      }));
      return false;
    }
    this.renderer.setPixelRatio(Math.min(window.devicePixelRatio || 1, 2));
    this.container.prepend(this.renderer.domElement);
    this.softwareGL = software;

    this.scene = new THREE.Scene();
    this.scene.background = new THREE.Color("#f4f6f9");
    this.camera = new THREE.PerspectiveCamera(40, 1, 0.01, 200);
    this.camera.up.set(0, 0, 1);   // the world is Z up
    this.camera.position.set(2.5, -3, 2);

    this.sky = new THREE.HemisphereLight(0xffffff, 0x8890a0, 2.2);
    this.scene.add(this.sky);
    const sun = new THREE.DirectionalLight(0xffffff, 1.6);
    sun.position.set(3, -2, 5);
    this.scene.add(sun);

    this.axes = new THREE.AxesHelper(0.3);
    this.scene.add(this.axes);
    this.#grid(4, new THREE.Vector3());

    this.geometries = {
      cylinder: new THREE.CylinderGeometry(LINK_RADIUS, LINK_RADIUS, 1, software ? 8 : 12),
      sphere: new THREE.SphereGeometry(JOINT_RADIUS, software ? 10 : 16, software ? 6 : 12),
      ring: new THREE.TorusGeometry(TARGET_TRIAD, 0.004, 4, software ? 16 : 32),
      base: new THREE.BoxGeometry(0.08, 0.08, 0.03),
    };
    this.baseMaterial = new THREE.MeshStandardMaterial({ color: 0x555b66, roughness: 0.8 });

    this.controls = new OrbitControls(this.camera, this.renderer.domElement);
    this.controls.enableDamping = false;    // damping would need a render loop
    this.controls.addEventListener("change", () => {
      if (this.handling && !this.manual) {
        this.manual = true;
        this.#showFollow();
      }
      this.requestRender();
    });
    this.controls.addEventListener("start", () => { this.handling = true; });
    this.controls.addEventListener("end", () => { this.handling = false; });
    this.fitButton = this.container.querySelector("#fit3d");
    this.#showFollow();

    new ResizeObserver(() => this.#resize()).observe(this.container);
    this.#resize();
    return true;
  }

  /** A ground grid in the XY plane around `centre`, `size` metres across. */
  #grid(size, centre) {
    if (this.grid) {
      this.scene.remove(this.grid);
      this.grid.geometry.dispose();
      this.grid.material.dispose();
    }
    const step = size > 6 ? 0.5 : 0.1;
    const divisions = Math.max(2, Math.round(size / step));
    this.grid = new THREE.GridHelper(divisions * step, divisions, 0xb8bec8, 0xdde1e7);
    this.grid.rotation.x = Math.PI / 2;  // GridHelper lies in XZ; the ground here is XY
    this.grid.position.set(Math.round(centre.x / step) * step, Math.round(centre.y / step) * step, 0);
    this.grid.visible = !this.terrain;   // a terrain is the ground (the grid would cut it)
    this.scene.add(this.grid);
  }

  /**
   * The ground under the limbs: a /api/terrain patch (heights on a grid, row after row
   * along y) as a lit mesh, coloured from dark hollows to pale tops so that the relief
   * reads from any side. Replaces the ground grid. `#view3d` then carries
   * `data-terrain="drawn"` and `data-terrain-nodes` (for tests).
   */
  setTerrain(patch) {
    if (!this.ok || !patch) return;
    const { nx, ny, cell_m: cell, heights_m: heights } = patch;
    const [x0, y0] = patch.origin_m ?? [];
    if (!(nx >= 2 && ny >= 2 && heights?.length === nx * ny && cell > 0)) {
      throw new Error(`a terrain patch needs nx, ny >= 2 and nx * ny heights (got ${nx} x ${ny})`);
    }
    // Colours span the 2nd to the 98th percentile of the heights (a rock would wash out the rest).
    const sorted = Float64Array.from(heights).sort();
    const low = sorted[Math.floor(0.02 * (sorted.length - 1))];
    const span = Math.max(1e-6, sorted[Math.ceil(0.98 * (sorted.length - 1))] - low);
    const positions = new Float32Array(nx * ny * 3);
    const colours = new Float32Array(nx * ny * 3);
    const dark = new THREE.Color(GROUND_LOW);
    const pale = new THREE.Color(GROUND_HIGH);
    const colour = new THREE.Color();
    for (let i = 0; i < ny; i++) {
      for (let j = 0; j < nx; j++) {
        const k = i * nx + j;
        positions.set([x0 + j * cell, y0 + i * cell, heights[k]], 3 * k);
        colour.copy(dark).lerp(pale, Math.min(1, Math.max(0, (heights[k] - low) / span)));
        colours.set([colour.r, colour.g, colour.b], 3 * k);
      }
    }
    const indices = [];
    for (let i = 0; i < ny - 1; i++) {
      for (let j = 0; j < nx - 1; j++) {
        const a = i * nx + j;
        indices.push(a, a + 1, a + nx + 1, a, a + nx + 1, a + nx);   // counter-clockwise from above
      }
    }
    const geometry = new THREE.BufferGeometry();
    geometry.setAttribute("position", new THREE.BufferAttribute(positions, 3));
    geometry.setAttribute("color", new THREE.BufferAttribute(colours, 3));
    geometry.setIndex(indices);
    geometry.computeVertexNormals();
    const material = new THREE.MeshStandardMaterial({ vertexColors: true, roughness: 0.95, metalness: 0, flatShading: true });
    if (this.terrain) {
      this.scene.remove(this.terrain);
      this.terrain.geometry.dispose();
      this.terrain.material.dispose();
    }
    this.terrain = new THREE.Mesh(geometry, material);
    this.terrain.name = "terrain";
    this.scene.add(this.terrain);
    if (!this.graze) {
      // A low light across the ground: its slopes show (the sky's even light flattens them).
      this.graze = new THREE.DirectionalLight(0xfff1dd, 1.6);
      this.graze.position.set(-2, -3, 1.1);
      this.scene.add(this.graze);
      this.sky.intensity = 1.4;
    }
    this.grid.visible = false;
    this.container.dataset.terrain = "drawn";
    this.container.dataset.terrainNodes = String(nx * ny);
    this.requestRender();
  }

  #resize() {
    const { clientWidth: w, clientHeight: h } = this.container;
    if (!w || !h) return;
    // Pixel sizes on the canvas too (percentages would make the page re-lay it out).
    this.renderer.setSize(w, h, true);
    // The legend covers the view's top: the camera's centre is that of the part below it
    // (a view `top` px taller, of which the canvas shows all but its bottom), where a fit
    // puts the limbs and where they count as in view.
    const legend = this.container.querySelector(".view3d-legend");
    const top = legend ? Math.min(h / 3, legend.offsetTop + legend.offsetHeight) : 0;
    this.coveredTop = top / h;
    this.camera.aspect = w / (h + top);
    this.camera.setViewOffset(w, h + top, 0, 0, w, h);
    this.camera.updateProjectionMatrix();
    this.requestRender();
  }

  /**
   * The user is dragging the scrubber: when a draw is slow (software rendering), hold
   * paced draws until `ms` after the last move, so that the tree and the panels follow the
   * scrubber at once and the 3D view catches up when it stops. A fast draw is never held.
   */
  holdWhileScrubbing(ms = 200) {
    if (this.software) {
      this.renderDue = Math.max(this.renderDue, performance.now() + ms);
      if (this.deferred) {
        clearTimeout(this.deferred);
        this.deferred = null;
        this.requestRender(true);
      }
    }
  }

  /**
   * Whether the browser renders in software (no GPU: a headless browser, a remote desktop,
   * a virtual machine): its WebGL driver says so, or a draw takes longer than a display
   * frame. Its raster and compositing then cost the machine more than the page can time.
   */
  get software() {
    return this.softwareGL || (this.renderCost ?? 0) > FRAME_MS;
  }

  /**
   * Draw on the next animation frame (or in this one, `inFrame`). Frames of a live run
   * (`paced`) are drawn no more often than keeps drawing under RENDER_SHARE of the time:
   * with a GPU a draw takes a millisecond and every frame is drawn. A software driver (a
   * headless browser, a remote desktop) draws at most every SOFTWARE_DRAW_MS, and the live
   * page asks for frames slower still: drawing each would take a core from the run it
   * watches when both share a machine. The user's own orbiting is never held back.
   *
   * @param {boolean} paced  a live frame's draw (held to its pace), not the user's own move
   * @param {boolean} inFrame  called from an animation frame's callback: draw in this frame
   *   (a software-rendered page composites one frame for the frame's DOM and its 3D, not two)
   */
  requestRender(paced = false, inFrame = false) {
    if (!this.ok) return;
    if (this.pending) return;   // a draw is coming: it shows the scene as it is then
    const wait = paced ? this.renderDue - performance.now() : 0;
    if (wait > 0) {
      if (!this.deferred) {
        this.deferred = setTimeout(() => {
          this.deferred = null;
          this.requestRender(false);
        }, wait);
      }
      return;
    }
    if (inFrame) {
      this.#draw();
      return;
    }
    this.pending = true;
    requestAnimationFrame(() => {
      this.pending = false;
      this.#draw();
    });
  }

  #draw() {
    // This draw shows the latest scene: a paced draw held for later has nothing left to show.
    if (this.deferred) {
      clearTimeout(this.deferred);
      this.deferred = null;
    }
    const began = performance.now();
    this.renderer.render(this.scene, this.camera);
    if (this.softwareGL) {
      // Known to be slow, and its cost cannot be timed here (below): paced draws come at
      // most every SOFTWARE_DRAW_MS, without a frame more to time them.
      this.renderDue = began + SOFTWARE_DRAW_MS;
      return;
    }
    // The draw's real cost shows only when its frame is composited (a software-rendered
    // canvas is read back then): measure up to the next animation frame, less one frame.
    requestAnimationFrame(() => {
      const took = Math.max(0, performance.now() - began - FRAME_MS);
      this.renderCost = took;
      this.renderDue = began + took / RENDER_SHARE;
    });
  }

  #limb(name) {
    let limb = this.limbs.get(name);
    if (limb) return limb;
    const colour = new THREE.Color(this.colourOf(name));
    const solid = new THREE.MeshStandardMaterial({ color: colour, roughness: 0.55, metalness: 0.1 });
    const ghost = new THREE.MeshStandardMaterial({
      color: colour, transparent: true, opacity: 0.3, depthWrite: false, roughness: 0.9,
    });
    const group = new THREE.Group();
    group.name = name;
    this.scene.add(group);
    const commandTriad = new THREE.AxesHelper(COMMAND_TRIAD);
    const stateTriad = new THREE.AxesHelper(STATE_TRIAD);
    // The target frame: a ring about the end-effector's approach (z) axis around a triad,
    // with a dashed line to it from the sensed end-effector.
    const target = new THREE.Group();
    target.name = `${name} target`;
    // (drawn over what hides it: a foothold's ring lies in the ground it marks)
    const ring = new THREE.Mesh(
      this.geometries.ring, new THREE.MeshBasicMaterial({ color: colour, depthTest: false }),
    );
    ring.renderOrder = 1;
    target.add(new THREE.AxesHelper(TARGET_TRIAD), ring);
    const toTarget = new THREE.Line(
      new THREE.BufferGeometry().setFromPoints([new THREE.Vector3(), new THREE.Vector3()]),
      new THREE.LineDashedMaterial({ color: colour, dashSize: DASH, gapSize: GAP }),
    );
    group.add(commandTriad, stateTriad, target, toTarget);
    limb = {
      group, solid, colour,
      skeleton: new Polyline(group, solid, this.geometries),
      ghost: new Polyline(group, ghost, this.geometries),
      commandTriad, stateTriad, target, toTarget, alarm: null,
    };
    this.limbs.set(name, limb);
    return limb;
  }

  /**
   * Move everything to a frame's poses.
   * @param {object} frame
   * @param {boolean} inFrame  called from an animation frame's callback (see requestRender)
   */
  update(frame, inFrame = false) {
    if (!this.ok || !frame) return;
    for (const [name, data] of Object.entries(frame.limbs ?? {})) {
      const limb = this.#limb(name);
      limb.skeleton.update(data.skeleton ?? null, this.thick);
      limb.ghost.update(data.skeleton_command ?? null, this.thick * 0.9);
      pose(limb.commandTriad, data.command);
      pose(limb.stateTriad, data.state);
      this.#target(limb, data);
      // A limb in trouble glows red; a stale one is drawn dimmed.
      const alarm = (data.health_flags ?? []).some((f) => RED_FLAGS.has(f))
        ? "red" : data.stale ? "stale" : "";
      if (alarm !== limb.alarm) {
        limb.alarm = alarm;
        limb.solid.emissive.set(alarm === "red" ? 0x99000f : 0x000000);
        limb.solid.color.copy(limb.colour);
        if (alarm === "stale") limb.solid.color.lerp(new THREE.Color(0xbbbbbb), 0.6);
      }
    }
    for (const [robot, base] of Object.entries(frame.bases ?? {})) {
      let mesh = this.bases.get(robot);
      if (!mesh) {
        mesh = new THREE.Mesh(this.geometries.base, this.baseMaterial);
        this.scene.add(mesh);
        this.bases.set(robot, mesh);
      }
      pose(mesh, base);
    }
    this.lastFrame = frame;
    // Fitted on the first frame, and once more on the first with skeletons (the server
    // sends frames before it has made them).
    const skeletons = Object.values(frame.limbs ?? {}).some((limb) => limb.skeleton);
    if (!this.fitted || (skeletons && !this.fittedSkeletons)) {
      this.fitted = true;
      this.fittedSkeletons = skeletons;
      this.#scaleToScene(frame);
      this.fit();
    } else {
      // A limb that walks (or reaches) out of the view: fitted again, unless the user has
      // moved the view by hand; then the fit button says so.
      const out = !this.#inView(frame);
      if (out && !this.manual) this.#fitCamera();
      this.#showFollow(out && this.manual);
    }
    this.requestRender(true, inFrame);
  }

  /** Whether every point worth keeping in view (#points) is inside the camera's view. */
  #inView(frame) {
    this.camera.updateMatrixWorld();
    const below = 1 - 2 * (this.coveredTop ?? 0);   // (the legend's bottom edge, in NDC)
    const p = new THREE.Vector3();
    for (const point of this.#points(frame)) {
      p.copy(point).project(this.camera);
      if (!(Math.abs(p.x) <= 1 && p.y >= -1 && p.y <= below && p.z >= -1 && p.z <= 1)) return false;
    }
    return true;
  }

  /** #view3d's data-follow and data-out-of-view, and the fit button's look and title. */
  #showFollow(out = false) {
    const follow = this.manual ? "manual" : "auto";
    if (this.container.dataset.follow !== follow) this.container.dataset.follow = follow;
    const outText = out ? "true" : "false";
    if (this.container.dataset.outOfView === outText) return;
    this.container.dataset.outOfView = outText;
    if (this.fitButton) {
      this.fitButton.title = out
        ? "A limb is out of view: fit the view to the limbs (and follow them again)"
        : this.manual
          ? "Fit the view to the limbs, and follow them again as they move"
          : "Fit the view to the limbs (it follows them as they move until you orbit, zoom or pan)";
    }
  }

  /** The limb's target frame, and the dashed line to it from the sensed end-effector. */
  #target(limb, data) {
    pose(limb.target, data.target);
    const line = limb.toTarget;
    line.visible = limb.target.visible && limb.stateTriad.visible;
    if (!line.visible) return;
    const positions = line.geometry.attributes.position;
    positions.setXYZ(0, data.state[0], data.state[1], data.state[2]);
    positions.setXYZ(1, data.target[0], data.target[1], data.target[2]);
    positions.needsUpdate = true;
    line.geometry.computeBoundingSphere();
    line.computeLineDistances();
  }

  /**
   * Links, joints and triads sized for the scene once: a 2 m six-limb scene and a 0.6 m
   * single arm both get readable, not chunky, skeletons.
   */
  #scaleToScene(frame) {
    const points = this.#points(frame);
    if (!points.length) return;
    const size = new THREE.Box3().setFromPoints(points).getSize(new THREE.Vector3()).length();
    this.thick = Math.min(1, Math.max(0.3, size / 2.5));
    for (const limb of this.limbs.values()) {
      limb.commandTriad.scale.setScalar(this.thick);
      limb.stateTriad.scale.setScalar(this.thick);
      limb.target.scale.setScalar(this.thick);
      limb.toTarget.material.dashSize = DASH * this.thick;
      limb.toTarget.material.gapSize = GAP * this.thick;
    }
    for (const mesh of this.bases.values()) mesh.scale.setScalar(this.thick);
    // Draw the frame again with the new radii.
    for (const [name, data] of Object.entries(frame.limbs ?? {})) {
      const limb = this.limbs.get(name);
      limb.skeleton.update(data.skeleton ?? null, this.thick);
      limb.ghost.update(data.skeleton_command ?? null, this.thick * 0.9);
    }
  }

  /** The points worth keeping in view: skeletons, end-effector and target frames, bases. */
  #points(frame) {
    const points = [];
    const add = (p) => {
      if (Array.isArray(p) && p.length >= 3 && p.slice(0, 3).every(Number.isFinite)) {
        points.push(new THREE.Vector3(p[0], p[1], p[2]));
      }
    };
    for (const limb of Object.values(frame?.limbs ?? {})) {
      for (const p of limb.skeleton ?? []) add(p);
      for (const p of limb.skeleton_command ?? []) add(p);
      add(limb.state);
      add(limb.command);
      add(limb.target);
    }
    for (const base of Object.values(frame?.bases ?? {})) add(base);
    return points;
  }

  /**
   * Points around each limb's base at about its reach (the length of its skeleton), so
   * that a limb fitted folded stays in view when it stretches out.
   */
  #reachPoints(frame) {
    const points = [];
    for (const limb of Object.values(frame?.limbs ?? {})) {
      const skeleton = limb.skeleton ?? [];
      if (skeleton.length < 2) continue;
      let reach = 0;
      for (let i = 1; i < skeleton.length; i++) {
        reach += new THREE.Vector3(...skeleton[i]).distanceTo(new THREE.Vector3(...skeleton[i - 1]));
      }
      const [x, y, z] = skeleton[0];
      const r = 0.5 * reach;
      points.push(new THREE.Vector3(x - r, y - r, z), new THREE.Vector3(x + r, y + r, z + 0.5 * reach));
    }
    return points;
  }

  /**
   * Aim the camera at all the limbs of the last frame, and follow them again as they move
   * (the user's `fit`, and the first frames').
   * @param {boolean} render  draw now (a frame's own update draws at its pace)
   */
  fit(render = true) {
    if (!this.ok) return;
    this.manual = false;
    this.#showFollow(false);
    this.#fitCamera();
    if (render) this.requestRender();
  }

  /**
   * Aim the camera at all the limbs of the last frame: from a fixed direction, at the
   * distance where every point is inside the view (exact for a perspective camera).
   */
  #fitCamera() {
    if (!this.ok || !this.lastFrame) return;
    const points = [...this.#points(this.lastFrame), ...this.#reachPoints(this.lastFrame)];
    if (!points.length) return;
    const box = new THREE.Box3().setFromPoints(points);
    const centre = box.getCenter(new THREE.Vector3());
    const size = box.getSize(new THREE.Vector3());
    // Orientation of a camera looking at the centre from `direction`, then each point in
    // that frame (q): it is in view when |q.y| <= (D - q.z) tan(vfov/2), same for x.
    const direction = new THREE.Vector3(1.0, -1.3, 0.75).normalize();
    this.camera.position.copy(centre).add(direction);
    this.camera.lookAt(centre);
    this.camera.updateMatrixWorld();
    const rotation = new THREE.Quaternion().copy(this.camera.quaternion).invert();
    // (vertically, the part under the legend: its half is the whole view's less the legend)
    const tanFull = Math.tan((this.camera.fov * Math.PI) / 360);
    const covered = this.coveredTop ?? 0;
    const tanV = (tanFull * (1 - covered)) / (1 + covered);
    const tanH = tanFull * this.camera.aspect;
    const margin = 1.25;
    let distance = 0.3;
    for (const p of points) {
      const q = p.clone().sub(centre).applyQuaternion(rotation);
      distance = Math.max(distance, q.z + (margin * Math.abs(q.y)) / tanV, q.z + (margin * Math.abs(q.x)) / tanH);
    }
    this.camera.position.copy(centre).addScaledVector(direction, distance);
    this.camera.near = Math.max(0.005, distance / 200);
    this.camera.far = distance * 30;
    this.camera.updateProjectionMatrix();
    this.controls.target.copy(centre);
    this.controls.update();
    this.#grid(Math.max(2, Math.ceil(Math.max(size.x, size.y) * 1.6)), centre);
    this.axes.scale.setScalar(Math.max(1, Math.max(size.x, size.y) / 3));
  }
}

/** Whether this browser's WebGL is drawn in software, asked of a context made and lost at once. */
function probeSoftwareGL() {
  const canvas = document.createElement("canvas");
  const gl = canvas.getContext("webgl2") ?? canvas.getContext("webgl");
  if (!gl) return false;
  const software = softwareRenderer(gl);
  gl.getExtension("WEBGL_lose_context")?.loseContext();
  return software;
}

/** Whether a WebGL context is drawn by a software driver (SwiftShader, llvmpipe, ...). */
function softwareRenderer(gl) {
  try {
    const info = gl.getExtension("WEBGL_debug_renderer_info");
    const name = String(gl.getParameter(info ? info.UNMASKED_RENDERER_WEBGL : gl.RENDERER));
    return /swiftshader|llvmpipe|softpipe|software|microsoft basic render/i.test(name);
  } catch {
    return false;
  }
}
