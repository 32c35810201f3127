// Small DOM helpers. Everything from the server goes through textContent or through
// setAttribute of a fixed attribute name chosen here; nothing is ever parsed as HTML.

const SVG_NS = "http://www.w3.org/2000/svg";
const FORBIDDEN = /^(on|href$|src$|style$|xlink:href$|srcdoc$|action$|formaction$)/i;

function apply(node, props) {
  if (!props) return node;
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.setAttribute("class", value);
    else if (key === "text") node.textContent = String(value);
    else if (key === "testid") node.setAttribute("data-testid", value);
    else if (key === "on") {
      for (const [type, fn] of Object.entries(value)) node.addEventListener(type, fn);
    } else if (key === "hash") {
      // the only way to make a link: a hash built by our own code
      if (!String(value).startsWith("#")) throw new Error("a link must be a #hash");
      node.setAttribute("href", value);
    } else if (FORBIDDEN.test(key)) {
      throw new Error(`refusing to set ${key} through el()`);
    } else if (value === true) node.setAttribute(key, "");
    else node.setAttribute(key, String(value));
  }
  return node;
}

function append(node, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(node, child);
    else if (child instanceof Node) node.appendChild(child);
    else node.appendChild(document.createTextNode(String(child)));
  }
  return node;
}

/** An HTML element: el("td", {class: "x", testid: "y", text: "z"}, ...children). */
export function el(tag, props, ...children) {
  return append(apply(document.createElement(tag), props), children);
}

/** An SVG element, same conventions as el(). */
export function svg(tag, props, ...children) {
  return append(apply(document.createElementNS(SVG_NS, tag), props), children);
}

export function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}

export function replace(node, ...children) {
  clear(node);
  return append(node, children);
}

export const enc = encodeURIComponent;

/** The hash of a conversation page, built from raw ids (encoded here). */
export function conversationHash(id, { snapshot = null, principal = null } = {}) {
  let hash = `#/c/${enc(id)}`;
  if (snapshot) hash += `/s/${enc(snapshot)}`;
  if (principal !== null && principal !== undefined && principal !== "") {
    hash += `?principal=${enc(principal)}`;
  }
  return hash;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A short form of an id: a UUID's last 8 digits (v7 ids share their time prefix), else its first 8 characters. */
export function shortId(id) {
  if (id === null || id === undefined) return "—";
  const text = String(id);
  if (UUID.test(text)) return text.slice(-8);
  return text.length > 10 ? text.slice(0, 8) : text;
}

const KNOWN_STATUS = new Set([
  "running", "awaiting_responses", "completed", "failed", "cancelled", "idle", "lost",
]);

/** A status badge; the class comes from a fixed list, never from the server's text. */
export function statusBadge(status, props = {}) {
  const known = KNOWN_STATUS.has(status) ? status : "other";
  return el("span", { ...props, class: `status status-${known}`, text: status ?? "—" });
}

function pad(n) {
  return String(n).padStart(2, "0");
}

/** A timestamp (ISO text or epoch seconds) as local "YYYY-MM-DD HH:MM:SS". */
export function formatTime(value) {
  if (value === null || value === undefined || value === "") return "—";
  const date = typeof value === "number" ? new Date(value * 1000) : new Date(value);
  if (Number.isNaN(date.getTime())) return String(value);
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ` +
    `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
}

/** Like formatTime, but only the time of day for a moment of today. */
export function formatShortTime(value) {
  const full = formatTime(value);
  const now = new Date();
  const today = `${now.getFullYear()}-${pad(now.getMonth() + 1)}-${pad(now.getDate())}`;
  return full.startsWith(today + " ") ? full.slice(11) : full;
}

export function formatDuration(seconds) {
  const s = Math.abs(Math.round(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
  return `${Math.floor(s / 86400)}d ${Math.floor((s % 86400) / 3600)}h`;
}

/** "owner · live · 12s left" / "owner · expired 3m ago" / "none". */
export function leaseText(lease) {
  if (!lease) return "none";
  const left = Number(lease.expires_at) - Date.now() / 1000;
  const owner = lease.owner ?? "?";
  if (!Number.isFinite(left)) return `${owner} · ${lease.live ? "live" : "expired"}`;
  if (lease.live) return `${owner} · live · ${left >= 0 ? formatDuration(left) + " left" : "due"}`;
  return `${owner} · expired${left < 0 ? " " + formatDuration(left) + " ago" : ""}`;
}

/** A short one-line JSON preview of any value. */
export function preview(value, max = 120) {
  let text;
  if (value === undefined) text = "undefined";
  else {
    try {
      text = typeof value === "string" ? JSON.stringify(value) : JSON.stringify(value);
    } catch {
      text = String(value);
    }
  }
  if (text === undefined) text = String(value);
  return text.length > max ? text.slice(0, max - 1) + "…" : text;
}

/** A value shown as compact JSON, truncated, with a "more" toggle when long. */
export function valueText(value, max = 160, props = {}) {
  if (typeof value === "string") {
    // a string as its text (quotes drawn by CSS), not JSON-escaped
    const span = el("span", { ...props, class: `json str ${props.class ?? ""}`.trim() });
    const text = el("span", { class: "q", text: value.length > max ? value.slice(0, max) + "…" : value });
    span.appendChild(text);
    if (value.length > max) {
      const toggle = el("button", { type: "button", class: "more", text: "more" });
      toggle.addEventListener("click", () => {
        const open = toggle.textContent === "more";
        text.textContent = open ? value : value.slice(0, max) + "…";
        toggle.textContent = open ? "less" : "more";
      });
      span.append(" ", toggle);
    }
    return span;
  }
  let full;
  try {
    full = value === undefined ? "undefined" : JSON.stringify(value);
  } catch {
    full = String(value);
  }
  if (full === undefined) full = String(value);
  const span = el("span", { ...props, class: `json ${props.class ?? ""}`.trim() });
  if (full.length <= max) {
    span.textContent = full;
    return span;
  }
  const text = el("span", { text: full.slice(0, max) + "…" });
  const toggle = el("button", { type: "button", class: "more", text: "more" });
  toggle.addEventListener("click", () => {
    const open = toggle.textContent === "more";
    text.textContent = open ? full : full.slice(0, max) + "…";
    toggle.textContent = open ? "less" : "more";
  });
  return append(span, [text, " ", toggle]);
}
