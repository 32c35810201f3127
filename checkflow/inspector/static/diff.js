// A recursive JSON diff: the paths that differ between two values, each added, removed or
// changed, with the old and new values.

import { el, valueText } from "./dom.js";

const LIMIT = 2000;

function isObject(value) {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function join(path, key) {
  if (typeof key === "number") return `${path}[${key}]`;
  return path ? `${path}.${key}` : String(key);
}

/** The differences from `before` to `after`: [{path, change, old, new}], at most `limit`. */
export function jsonDiff(before, after, limit = LIMIT) {
  const out = [];
  let truncated = false;
  const push = (entry) => {
    if (out.length >= limit) {
      truncated = true;
      return false;
    }
    out.push(entry);
    return true;
  };
  const walk = (a, b, path) => {
    if (truncated) return;
    if (isObject(a) && isObject(b)) {
      for (const key of Object.keys(a)) {
        if (!Object.prototype.hasOwnProperty.call(b, key)) {
          if (!push({ path: join(path, key), change: "removed", old: a[key] })) return;
        } else walk(a[key], b[key], join(path, key));
      }
      for (const key of Object.keys(b)) {
        if (!Object.prototype.hasOwnProperty.call(a, key)) {
          if (!push({ path: join(path, key), change: "added", new: b[key] })) return;
        }
      }
      return;
    }
    if (Array.isArray(a) && Array.isArray(b)) {
      const common = Math.min(a.length, b.length);
      for (let i = 0; i < common; i++) walk(a[i], b[i], join(path, i));
      for (let i = common; i < a.length; i++) {
        if (!push({ path: join(path, i), change: "removed", old: a[i] })) return;
      }
      for (let i = common; i < b.length; i++) {
        if (!push({ path: join(path, i), change: "added", new: b[i] })) return;
      }
      return;
    }
    if (a === b) return;
    if (typeof a === "number" && typeof b === "number" && Number.isNaN(a) && Number.isNaN(b)) return;
    push({ path: path || "(root)", change: "changed", old: a, new: b });
  };
  walk(before, after, "");
  return { entries: out, truncated };
}

/** The diff as a list of `diff-entry` rows. */
export function renderDiff(result) {
  const list = el("ul", { class: "diff-list" });
  if (!result.entries.length) {
    list.appendChild(el("li", { class: "muted", text: "no differences" }));
    return list;
  }
  const fragment = document.createDocumentFragment();
  for (const entry of result.entries) {
    const li = el("li", {
      testid: "diff-entry",
      class: `diff-entry diff-${entry.change}`,
      "data-path": entry.path,
      "data-change": entry.change,
    });
    li.appendChild(el("span", { class: `change change-${entry.change}`, text: entry.change }));
    li.appendChild(el("span", { class: "path", text: entry.path }));
    const values = el("div", { class: "diff-values" });
    if (entry.change !== "added") values.appendChild(el("div", { class: "old" }, el("span", { class: "sign", text: "−" }), valueText(entry.old)));
    if (entry.change !== "removed") values.appendChild(el("div", { class: "new" }, el("span", { class: "sign", text: "+" }), valueText(entry.new)));
    li.appendChild(values);
    fragment.appendChild(li);
  }
  list.appendChild(fragment);
  if (result.truncated) {
    list.appendChild(el("li", { class: "muted", text: `only the first ${result.entries.length} differences are shown` }));
  }
  return list;
}
