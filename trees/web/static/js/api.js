// Talking to the limbtree server: REST calls carrying the token, and the live WebSocket.

/** The token from the page's own URL (`?token=...`), or "" when there is none. */
export const TOKEN = new URLSearchParams(location.search).get("token") ?? "";

/** An error from the server, with its HTTP status and the server's `error` text. */
export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

function headers(extra = {}) {
  return TOKEN ? { "X-Limbtree-Token": TOKEN, ...extra } : extra;
}

async function readError(response) {
  let text = `${response.status} ${response.statusText}`;
  try {
    const body = await response.json();
    if (body && body.error) text = String(body.error);
  } catch {
    // not JSON: keep the status line
  }
  return new ApiError(response.status, text);
}

/** GET a JSON document from the API; throws ApiError on a non-2xx reply. */
export async function getJSON(path, { signal } = {}) {
  const response = await fetch(path, { headers: headers(), signal, cache: "no-store" });
  if (!response.ok) throw await readError(response);
  return response.json();
}

export const getRun = () => getJSON("/api/run");
export const getFrame = (tick) => getJSON(`/api/frame/${tick}`);
export const getNode = (id) => getJSON(`/api/node/${encodeURIComponent(id)}`);
export const getTerrain = () => getJSON("/api/terrain");

/** POST a control operation (`{op: ...}`); resolves to the run state fields of the reply. */
export async function postControl(body) {
  const response = await fetch("/api/control", {
    method: "POST",
    headers: headers({ "Content-Type": "application/json" }),
    body: JSON.stringify(body),
  });
  if (!response.ok) throw await readError(response);
  return response.json();
}

/**
 * Fetches frames for a scrubber: at most one request in flight, and whatever was asked for
 * last is always fetched in the end (intermediate positions asked for meanwhile are skipped).
 */
export class FrameFetcher {
  /** @param {(frame: object) => void} onFrame  @param {(err: Error) => void} onError */
  constructor(onFrame, onError) {
    this.onFrame = onFrame;
    this.onError = onError;
    this.wanted = null;
    this.fetching = null;   // the tick whose frame is on its way
    this.busy = false;
  }

  /** The tick the page is going to: the newest asked for, else the one on its way (or null). */
  get heading() {
    return this.wanted ?? this.fetching;
  }

  request(tick) {
    this.wanted = tick;
    if (!this.busy) this.#pump();
  }

  /** Forget a pending request (e.g. when following live frames again). */
  cancel() {
    this.wanted = null;
  }

  async #pump() {
    this.busy = true;
    while (this.wanted !== null) {
      const tick = this.wanted;
      this.wanted = null;
      this.fetching = tick;
      try {
        const frame = await getFrame(tick);
        this.fetching = null;
        // Drawn even when a newer position is pending: the page follows the drag.
        this.onFrame(frame);
      } catch (err) {
        this.fetching = null;
        this.onError(err);
      }
    }
    this.busy = false;
  }
}

/**
 * The live WebSocket, reconnected with back-off while the run has not ended.
 * Handlers: onMessage(msg), onState("connecting" | "open" | "disconnected").
 */
export class LiveSocket {
  constructor({ onMessage, onState }) {
    this.onMessage = onMessage;
    this.onState = onState;
    this.ended = false;
    this.delay = 500;
    this.socket = null;
    this.timer = null;
  }

  url() {
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    const query = TOKEN ? `?token=${encodeURIComponent(TOKEN)}` : "";
    return `${scheme}//${location.host}/ws${query}`;
  }

  connect() {
    if (this.ended) return;
    this.onState("connecting");
    let socket;
    try {
      socket = new WebSocket(this.url());
    } catch {
      this.#retry();
      return;
    }
    this.socket = socket;
    socket.onopen = () => {
      this.delay = 500;
      this.onState("open");
    };
    socket.onmessage = (event) => {
      let msg;
      try {
        msg = JSON.parse(event.data);
      } catch {
        return;
      }
      if (msg.type === "end") this.ended = true;
      this.onMessage(msg);
    };
    socket.onclose = () => {
      this.socket = null;
      if (this.ended) return;
      this.onState("disconnected");
      this.#retry();
    };
    // onerror is always followed by onclose, which does the work.
    socket.onerror = () => {};
  }

  /** Whether the socket is connected. */
  get open() {
    return this.socket?.readyState === WebSocket.OPEN;
  }

  /** Send a request to the server, if connected (else it is dropped: see onState). */
  send(message) {
    if (this.socket?.readyState === WebSocket.OPEN) this.socket.send(JSON.stringify(message));
  }

  /** Stop for good (the run ended). */
  close() {
    this.ended = true;
    clearTimeout(this.timer);
    if (this.socket) this.socket.close();
  }

  #retry() {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.connect(), this.delay);
    this.delay = Math.min(this.delay * 2, 10000);
  }
}
