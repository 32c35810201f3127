// The inspector's HTTP client: JSON calls with the optional bearer token, and a server-sent
// events reader over fetch (EventSource cannot send an Authorization header).
// Every URL is relative to the page (<base>/inspector/), so a proxy prefix works.

const TOKEN_KEY = "checkflow-inspector-token";

export class ApiError extends Error {
  constructor(status, code, message, body = null) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
    this.body = body;
  }
}

const unauthorizedListeners = new Set();

/** Called (with the error) whenever an API call answers 401. */
export function onUnauthorized(fn) {
  unauthorizedListeners.add(fn);
  return () => unauthorizedListeners.delete(fn);
}

export function getToken() {
  try {
    return sessionStorage.getItem(TOKEN_KEY) || "";
  } catch {
    return "";
  }
}

export function setToken(token) {
  try {
    if (token) sessionStorage.setItem(TOKEN_KEY, token);
    else sessionStorage.removeItem(TOKEN_KEY);
  } catch {
    // storage disabled: the token lives for this call only
  }
}

function headers(extra = {}) {
  const result = { ...extra };
  const token = getToken();
  if (token) result.Authorization = `Bearer ${token}`;
  return result;
}

async function errorOf(response) {
  let body = null;
  let code = `http_${response.status}`;
  let message = `${response.status} ${response.statusText || "error"}`;
  try {
    const text = await response.text();
    if (text) {
      try {
        body = JSON.parse(text);
      } catch {
        message = `${message}: ${text.slice(0, 300)}`;
      }
    }
  } catch {
    // the body could not be read; keep the status line
  }
  if (body && typeof body === "object" && body.error && typeof body.error === "object") {
    if (typeof body.error.code === "string") code = body.error.code;
    if (typeof body.error.message === "string" && body.error.message) {
      message = body.error.message;
    } else {
      message = `${message} (${code})`;
    }
  }
  const error = new ApiError(response.status, code, message, body);
  if (response.status === 401) for (const fn of unauthorizedListeners) fn(error);
  return error;
}

async function request(url, { method = "GET", body, signal, accept = "application/json" } = {}) {
  const init = {
    method,
    credentials: "same-origin",
    cache: "no-store",
    headers: headers({ Accept: accept }),
    signal,
  };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(url, init);
  } catch (exc) {
    if (exc && exc.name === "AbortError") throw exc;
    throw new ApiError(0, "network", `network error: ${exc && exc.message ? exc.message : exc}`);
  }
  if (!response.ok) throw await errorOf(response);
  return response;
}

async function json(response) {
  const text = await response.text();
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch {
    throw new ApiError(response.status, "bad_json", "the server answered something that is not JSON");
  }
}

export async function getJSON(url, options = {}) {
  return json(await request(url, options));
}

export async function postJSON(url, body, options = {}) {
  return json(await request(url, { ...options, method: "POST", body }));
}

/**
 * Parse server-sent events from a byte stream. `onFrame({event, id, data, raw})` is called
 * per dispatched frame (`data` is the parsed JSON, or the text when it is not JSON).
 */
export async function readSSE(body, onFrame) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let event = "";
  let id = null;
  let data = [];
  const line = (text) => {
    if (text === "") {
      if (data.length || event) {
        const raw = data.join("\n");
        let parsed = raw;
        try {
          parsed = raw ? JSON.parse(raw) : null;
        } catch {
          parsed = raw;
        }
        onFrame({ event: event || "message", id, data: parsed, raw });
      }
      event = "";
      id = null;
      data = [];
      return;
    }
    if (text.startsWith(":")) return; // a comment (": ping")
    const colon = text.indexOf(":");
    const field = colon < 0 ? text : text.slice(0, colon);
    let value = colon < 0 ? "" : text.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") event = value;
    else if (field === "data") data.push(value);
    else if (field === "id") id = value;
  };
  const drain = (final) => {
    let start = 0;
    for (let i = 0; i < buffer.length; i++) {
      const ch = buffer[i];
      if (ch === "\n" || ch === "\r") {
        if (ch === "\r" && i === buffer.length - 1 && !final) break; // maybe \r\n split
        line(buffer.slice(start, i));
        if (ch === "\r" && buffer[i + 1] === "\n") i++;
        start = i + 1;
      }
    }
    buffer = buffer.slice(start);
  };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    drain(false);
  }
  buffer += decoder.decode();
  drain(true);
  if (buffer) line(buffer);
  line("");
}

/** Follow an SSE URL until it ends (or `signal` aborts); resolves when the stream ends. */
export async function followSSE(url, { signal, onFrame }) {
  const response = await request(url, { signal, accept: "text/event-stream" });
  if (!response.body) return;
  await readSSE(response.body, onFrame);
}

/**
 * POST a run with `?stream=true`: every event of the turn reaches `onFrame` as it happens
 * (the page's own turn, from its first event: following /events instead could start after a
 * short turn ended). Resolves with the `result` frame's run body; an `error` frame rejects.
 */
export async function runStreamed(url, body, { signal, onFrame }) {
  const response = await request(url, { method: "POST", body, signal, accept: "text/event-stream" });
  let result = null;
  let failure = null;
  if (response.body) {
    await readSSE(response.body, (frame) => {
      if (frame.event === "result") result = frame.data;
      else if (frame.event === "error") failure = frame.data;
      else onFrame(frame);
    });
  }
  if (failure) {
    const error = failure && typeof failure === "object" && failure.error ? failure.error : {};
    throw new ApiError(response.status, String(error.code || "run_failed"),
      String(error.message || "the run failed"), failure);
  }
  return result;
}

const e = encodeURIComponent;

/** The inspector's read API and the native API's writes, relative to the page. */
export const api = {
  meta: (signal) => getJSON("api/meta", { signal }),
  conversations: ({ limit = 50, cursor = null, status = "" } = {}, signal) => {
    const query = new URLSearchParams({ limit: String(limit) });
    if (cursor) query.set("cursor", cursor);
    if (status) query.set("status", status);
    return getJSON(`api/conversations?${query}`, { signal });
  },
  orphans: (signal) => getJSON("api/orphans", { signal }),
  conversation: (id, principal, signal) =>
    getJSON(`api/conversations/${e(id)}${principalQuery(principal)}`, { signal }),
  snapshot: (id, snapshotId, principal, signal) =>
    getJSON(`api/conversations/${e(id)}/snapshots/${e(snapshotId)}${principalQuery(principal)}`,
      { signal }),
  run: (id, body, signal) => postJSON(`../v1/conversations/${e(id)}/runs`, body, { signal }),
  runStreamed: (id, body, options) =>
    runStreamed(`../v1/conversations/${e(id)}/runs?stream=true`, body, options),
  cancel: (id, signal) => postJSON(`../v1/conversations/${e(id)}/cancel`, {}, { signal }),
  events: (id, after, options) => {
    const query = after ? `?after=${e(String(after))}` : "";
    return followSSE(`../v1/conversations/${e(id)}/events${query}`, options);
  },
};

function principalQuery(principal) {
  return principal !== null && principal !== undefined && principal !== ""
    ? `?principal=${e(principal)}` : "";
}
