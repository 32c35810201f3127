// A collapsible JSON tree: <details> per object/array (open at the first levels, children
// built when first opened), long strings truncated with a "more" toggle, and
// {"$opaque": type, "value": ...} shown with an opaque type badge.

import { el } from "./dom.js";

const LONG = 160;
const PAGE = 200;

export function isOpaque(value) {
  if (!value || typeof value !== "object" || Array.isArray(value)) return false;
  const keys = Object.keys(value);
  return typeof value.$opaque === "string" && keys.every((k) => k === "$opaque" || k === "value");
}

function isContainer(value) {
  return value !== null && typeof value === "object";
}

function sizeText(value) {
  if (Array.isArray(value)) return `[${value.length}]`;
  return `{${Object.keys(value).length}}`;
}

function keyNode(key, options, isIndex) {
  if (key === null) return null;
  return [el("span", {
    class: isIndex ? "key index" : "key",
    testid: options.testids ? "state-key" : null,
    text: String(key),
  }), el("span", { class: "colon", text: ": " })];
}

function leafNode(value, options) {
  const props = { testid: options.testids ? "state-value" : null };
  if (value === null) return el("span", { ...props, class: "val null", text: "null" });
  switch (typeof value) {
    case "string": {
      // the text itself (quotes drawn by CSS), not JSON-escaped: what the state holds
      if (value.length <= LONG) {
        return el("span", { ...props, class: "val str" }, el("span", { class: "q", text: value }));
      }
      const span = el("span", { ...props, class: "val str" });
      const text = el("span", { class: "q", text: value.slice(0, LONG) + "…" });
      const toggle = el("button", { type: "button", class: "more", text: "more" });
      toggle.addEventListener("click", (event) => {
        event.preventDefault();
        const open = toggle.textContent === "more";
        text.textContent = open ? value : value.slice(0, LONG) + "…";
        toggle.textContent = open ? "less" : "more";
      });
      span.append(text, " ", toggle, el("span", { class: "len", text: ` (${value.length} chars)` }));
      return span;
    }
    case "number":
      return el("span", { ...props, class: "val num", text: String(value) });
    case "boolean":
      return el("span", { ...props, class: "val bool", text: String(value) });
    default:
      return el("span", { ...props, class: "val", text: String(value) });
  }
}

function fillChildren(container, value, depth, options) {
  const entries = Array.isArray(value)
    ? value.map((v, i) => [i, v])
    : Object.entries(value);
  let shown = 0;
  const more = () => {
    const stop = Math.min(entries.length, shown + PAGE);
    const fragment = document.createDocumentFragment();
    for (; shown < stop; shown++) {
      const [k, v] = entries[shown];
      fragment.appendChild(node(k, v, depth + 1, options, Array.isArray(value)));
    }
    if (shown < entries.length) {
      const button = el("button", {
        type: "button", class: "more", text: `show ${Math.min(PAGE, entries.length - shown)} more of ${entries.length - shown}`,
      });
      button.addEventListener("click", () => {
        button.remove();
        more();
      });
      fragment.appendChild(el("div", { class: "row" }, button));
    }
    container.appendChild(fragment);
  };
  more();
}

function node(key, value, depth, options, isIndex = false) {
  if (isOpaque(value)) {
    const badge = el("span", { class: "opaque", text: `opaque ${value.$opaque}` });
    if (!("value" in value) || !isContainer(value.value)) {
      return el("div", { class: "row" }, keyNode(key, options, isIndex), badge, " ",
        "value" in value ? leafNode(value.value, options) : null);
    }
    return container(key, value.value, depth, options, isIndex, badge);
  }
  if (!isContainer(value)) {
    return el("div", { class: "row" }, keyNode(key, options, isIndex), leafNode(value, options));
  }
  return container(key, value, depth, options, isIndex, null);
}

function container(key, value, depth, options, isIndex, badge) {
  const empty = Array.isArray(value) ? value.length === 0 : Object.keys(value).length === 0;
  if (empty) {
    return el("div", { class: "row" }, keyNode(key, options, isIndex), badge, badge ? " " : null,
      el("span", {
        class: "val empty", testid: options.testids ? "state-value" : null,
        text: Array.isArray(value) ? "[]" : "{}",
      }));
  }
  const details = el("details", { class: "node" });
  const summary = el("summary", null, keyNode(key, options, isIndex), badge, badge ? " " : null,
    el("span", { class: "size", text: sizeText(value) }));
  details.appendChild(summary);
  const body = el("div", { class: "children" });
  details.appendChild(body);
  let filled = false;
  const fill = () => {
    if (filled) return;
    filled = true;
    fillChildren(body, value, depth, options);
  };
  if (depth < options.openDepth) {
    details.open = true;
    fill();
  } else {
    details.addEventListener("toggle", () => { if (details.open) fill(); });
  }
  return details;
}

/**
 * A tree of `value`. Options: `testids` (mark keys `state-key`, leaves `state-value`),
 * `openDepth` (levels open at first, default 2), `rootKeys` (render the top object's
 * entries as roots instead of one root node).
 */
export function jsonTree(value, { testids = false, openDepth = 2, rootKeys = false } = {}) {
  const options = { testids, openDepth };
  const root = el("div", { class: "json-tree" });
  if (rootKeys && isContainer(value) && !Array.isArray(value) && !isOpaque(value)) {
    for (const [k, v] of Object.entries(value)) root.appendChild(node(k, v, 0, options));
    if (!Object.keys(value).length) root.appendChild(el("div", { class: "muted", text: "(empty)" }));
  } else {
    root.appendChild(node(null, value, 0, options));
  }
  return root;
}
