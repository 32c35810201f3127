// Form controls built from a JSON Schema (the draft 2020-12 subset msgspec and pydantic emit).
//
//   const form = schemaForm(schema, { idPrefix: "answer-1" });
//   parent.append(form.element);
//   const result = form.read();   // {ok: true, value} | {ok: false, errors: ["amount: ..."]}
//
// Every control has a <label for> and name = its JSON path ("value" for the root itself,
// "arguments.amount", "lines[0].sku"); a branch select is named "<path>#type". Booleans are
// radios valued "true" / "false" (and "" = not set when optional). A schema it cannot build
// becomes a JSON textarea; a structured form has a "raw JSON" toggle. Values from the schema
// (titles, descriptions, enum values, defaults) only ever reach the page as text.
// The element is a <form> (so radio groups of two forms never mix); Enter does not submit, it
// dispatches a bubbling "cf-submit" event instead.

import { REF, clone, deref, isObj, kind, matches, own, pathName, same, shortLabel, typeOk } from "./formschema.js";

export { pathName };

const MAX_DEPTH = 16;

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

/** Text with ``code`` / `code` spans shown as <code>, appended to parent as text nodes. */
function richText(parent, text) {
  const parts = String(text).split(/``(.+?)``|`([^`]+)`/s);
  parts.forEach((part, i) => {
    if (part === undefined || part === "") return;
    if (i % 3 === 0) parent.append(document.createTextNode(part));
    else parent.append(el("code", null, part));
  });
  return parent;
}

function uid(ctx, path, suffix = "") {
  const slug = (path.length ? path.map(String).join("-") : "value").replace(/[^A-Za-z0-9_-]/g, "_");
  const base = `${ctx.prefix}-${slug}${suffix}`;
  let id = base;
  for (let n = 2; ctx.ids.has(id); n++) id = `${base}-${n}`;
  ctx.ids.add(id);
  return id;
}

/** Forget the ids of a subtree that is being thrown away, so rebuilt fields get them back. */
function release(ctx, node) {
  if (!node) return;
  if (node.id) ctx.ids.delete(node.id);
  for (const child of node.querySelectorAll("[id]")) ctx.ids.delete(child.id);
}

function help(ctx, s, wrap, path, controls) {
  if (!isObj(s) || typeof s.description !== "string" || !s.description) return;
  const p = richText(el("p", "cf-help"), s.description);
  p.id = uid(ctx, path, "-help");
  wrap.append(p);
  for (const c of controls) c.setAttribute("aria-describedby", p.id);
}

/** The error slot of a field: mark(msg) shows it, clear() hides it. */
function errorSlot(ctx, wrap, controls) {
  const slot = el("p", "cf-error");
  slot.hidden = true;
  wrap.append(slot);
  const mark = {
    wrap,
    set(msg) {
      slot.textContent = msg; slot.hidden = false;
      for (const c of controls) c.setAttribute("aria-invalid", "true");
    },
    clear() {
      slot.textContent = ""; slot.hidden = true;
      for (const c of controls) c.removeAttribute("aria-invalid");
    },
  };
  ctx.marks.push(mark);
  return mark;
}

function requiredStar(wrap, required) {
  if (required) {
    const star = el("span", "cf-required", "*");
    star.title = "required";
    wrap.append(star);
  }
}

/** The label column of a field: the label (or a plain caption) and the required star. */
function head(text, required, forId) {
  const cell = el("div", "cf-head");
  const label = el(forId ? "label" : "span", "cf-label", text);
  if (forId) label.htmlFor = forId;
  cell.append(label);
  requiredStar(cell, required);
  return { cell, label };
}

/** A labelled single control: label, control, help, error slot. */
function field(ctx, s, path, o, control) {
  const wrap = el("div", "cf-field");
  control.id = uid(ctx, path);
  control.name = pathName(path);
  wrap.append(head(o.label, o.required, control.id).cell);
  if (o.required) control.setAttribute("aria-required", "true");
  wrap.append(control);
  help(ctx, s, wrap, path, [control]);
  const mark = errorSlot(ctx, wrap, [control]);
  const err = (errs, msg) => errs.push({ name: pathName(path), msg, mark });
  return { wrap, err };
}

function build(ctx, schema, path, o) {
  const depth = (o.depth || 0) + 1;
  const s = depth > MAX_DEPTH ? null : deref(schema, ctx);
  const k = s === null ? "raw" : kind(s);
  // a given value is used as it is (a key it lacks stays unset); defaults fill a fresh form
  const initial = o.initial !== undefined ? o.initial : !o.noDefault && own(s, "default") ? clone(s.default) : undefined;
  const label = o.label ?? ((isObj(s) && s.title) || (path.length ? String(path[path.length - 1]) : "value"));
  return BUILDERS[k](ctx, s || {}, path, { ...o, initial, depth, label });
}

function stringNode(ctx, s, path, o) {
  const input = el("input", "cf-input");
  input.type = "text";
  input.autocomplete = "off";
  if (typeof o.initial === "string") input.value = o.initial;
  const hint = { "date-time": "2024-01-31T12:00:00Z", date: "2024-01-31", time: "12:00:00",
    uuid: "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" }[s.format];
  if (hint) input.placeholder = hint;
  const f = field(ctx, s, path, o, input);
  const formats = {
    "date-time": /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:?\d{2})?$/,
    date: /^\d{4}-\d{2}-\d{2}$/,
    time: /^\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:?\d{2})?$/,
    uuid: /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i,
  };
  return {
    element: f.wrap,
    empty: () => input.value === "",
    read(errs) {
      const v = input.value;
      if (v === "" && !o.required) return undefined;
      const n = [...v].length;
      if (Number.isInteger(s.minLength) && n < s.minLength) f.err(errs, `must be at least ${s.minLength} character(s) long`);
      else if (Number.isInteger(s.maxLength) && n > s.maxLength) f.err(errs, `must be at most ${s.maxLength} character(s) long`);
      else if (typeof s.pattern === "string" && !safeTest(s.pattern, v)) f.err(errs, `must match the pattern ${s.pattern}`);
      else if (formats[s.format] && !formats[s.format].test(v)) f.err(errs, `must be a ${s.format} (e.g. ${hint})`);
      return v;
    },
  };
}

function safeTest(pattern, value) {
  try { return new RegExp(pattern, "u").test(value); } catch { return true; }
}

function numberNode(ctx, s, path, o) {
  const input = el("input", "cf-input cf-number");
  input.type = "number";
  input.step = s.type === "integer" ? "1" : "any";
  if (typeof s.minimum === "number") input.min = String(s.minimum);
  if (typeof s.maximum === "number") input.max = String(s.maximum);
  if (typeof o.initial === "number") input.value = String(o.initial);
  const f = field(ctx, s, path, o, input);
  return {
    element: f.wrap,
    empty: () => input.value === "" && !input.validity.badInput,
    read(errs) {
      if (input.validity.badInput) { f.err(errs, "must be a number"); return undefined; }
      if (input.value.trim() === "") {
        if (o.required) f.err(errs, "required");
        return undefined;
      }
      const v = Number(input.value);
      if (!Number.isFinite(v)) f.err(errs, "must be a number");
      else if (s.type === "integer" && !Number.isInteger(v)) f.err(errs, "must be a whole number");
      else if (typeof s.minimum === "number" && v < s.minimum) f.err(errs, `must be at least ${s.minimum}`);
      else if (typeof s.maximum === "number" && v > s.maximum) f.err(errs, `must be at most ${s.maximum}`);
      else if (typeof s.exclusiveMinimum === "number" && v <= s.exclusiveMinimum) f.err(errs, `must be more than ${s.exclusiveMinimum}`);
      else if (typeof s.exclusiveMaximum === "number" && v >= s.exclusiveMaximum) f.err(errs, `must be less than ${s.exclusiveMaximum}`);
      else if (typeof s.multipleOf === "number" && s.multipleOf > 0 &&
        Math.abs(v / s.multipleOf - Math.round(v / s.multipleOf)) > 1e-9) f.err(errs, `must be a multiple of ${s.multipleOf}`);
      return v;
    },
  };
}

function booleanNode(ctx, s, path, o) {
  const wrap = el("div", "cf-field cf-bool");
  const row = el("div", "cf-radios");
  row.setAttribute("role", "radiogroup");
  if (o.root && !s.title) {
    wrap.classList.add("cf-untitled");
    row.setAttribute("aria-label", o.label);
  } else {
    const h = head(o.label, o.required, null);
    h.label.id = uid(ctx, path, "-label");
    row.setAttribute("aria-labelledby", h.label.id);
    wrap.append(h.cell);
  }
  const choices = [["yes", "true", true], ["no", "false", false]];
  if (!o.required) choices.push(["not set", "", undefined]);
  const radios = choices.map(([text, value, v]) => {
    const radio = el("input");
    radio.type = "radio";
    radio.name = pathName(path);
    radio.value = value;
    radio.id = uid(ctx, path, value ? `-${value}` : "-unset");
    radio.checked = o.initial === v || (v === undefined && typeof o.initial !== "boolean");
    const label = el("label", "cf-radio-label", text);
    label.htmlFor = radio.id;
    const item = el("span", "cf-radio");
    item.append(radio, label);
    row.append(item);
    return radio;
  });
  wrap.append(row);
  help(ctx, s, wrap, path, radios);
  const mark = errorSlot(ctx, wrap, radios);
  const checked = () => radios.find((r) => r.checked);
  return {
    element: wrap,
    empty: () => !checked() || checked().value === "",
    read(errs) {
      const r = checked();
      if (!r || r.value === "") {
        if (o.required) errs.push({ name: pathName(path), msg: "choose yes or no", mark });
        return undefined;
      }
      return r.value === "true";
    },
  };
}

function nullNode(ctx, s, path, o) {
  const wrap = el("div", "cf-field cf-null-field");
  wrap.append(head(o.label, false, null).cell, el("span", "cf-null", "null"));
  help(ctx, s, wrap, path, []);
  return { element: wrap, empty: () => !o.required, read: () => (o.required ? null : undefined) };
}

function enumNode(ctx, s, path, o) {
  const values = own(s, "const") ? [s.const] : s.enum;
  const select = el("select", "cf-select");
  let index = o.initial === undefined ? -1 : values.findIndex((v) => same(v, o.initial));
  if (index < 0 && o.required && values.length === 1) index = 0;
  if (index < 0 || !o.required) {
    const blank = el("option", null, o.required ? "— choose —" : "— none —");
    blank.value = "";
    select.append(blank);
  }
  values.forEach((v, i) => {
    const opt = el("option", null, typeof v === "string" ? v : JSON.stringify(v));
    opt.value = String(i);
    select.append(opt);
  });
  select.value = index < 0 ? "" : String(index);
  const f = field(ctx, s, path, o, select);
  return {
    element: f.wrap,
    empty: () => select.value === "",
    read(errs) {
      if (select.value === "") {
        if (o.required) f.err(errs, "required");
        return undefined;
      }
      return clone(values[Number(select.value)]);
    },
  };
}

function branchLabel(b, i, ctx) {
  if (isObj(b) && b.type === "null") return "none";
  return shortLabel(b, ctx) || `option ${i + 1}`;
}

function choiceNode(ctx, s, path, o) {
  const alts = s.anyOf || s.oneOf;
  const branches = alts.map((b) => deref(b, ctx));
  const labels = branches.map((b, i) => branchLabel(b, i, ctx));
  labels.forEach((l, i) => { if (labels.indexOf(l) !== i) labels[i] = `${l} (${i + 1})`; });
  const nullAt = branches.findIndex((b) => isObj(b) && b.type === "null");
  const omitNull = !o.required && (own(s, "default") ? s.default === null : true);
  const wrap = el("div", "cf-choice");
  const select = el("select", "cf-select cf-branch-select");
  const blank = !o.required && nullAt < 0;
  if (blank) {
    const opt = el("option", null, "— none —");
    opt.value = "";
    select.append(opt);
  }
  labels.forEach((l, i) => {
    const opt = el("option", null, l);
    opt.value = String(i);
    select.append(opt);
  });
  let index = o.initial === undefined ? -1 : branches.findIndex((b) => matches(o.initial, b, ctx));
  if (index < 0 && o.initial === undefined && !o.required) index = nullAt;
  if (index < 0 && !blank) index = Math.max(0, branches.findIndex((b, i) => i !== nullAt));
  select.value = index < 0 ? "" : String(index);
  select.id = uid(ctx, path, "-type");
  select.name = `${pathName(path)}#type`;
  const top = el("div", "cf-field cf-choice-head");
  top.append(head(`${o.label}: type`, o.required, select.id).cell, select);
  help(ctx, s, top, path, [select]);
  const slot = el("div", "cf-branch");
  wrap.append(top, slot);
  let node = null;
  const render = (initial) => {
    release(ctx, slot);
    slot.replaceChildren();
    const i = select.value === "" ? -1 : Number(select.value);
    node = i < 0 || i === nullAt ? null : build(ctx, alts[i], path,
      { label: o.label, required: true, initial, depth: o.depth, root: o.root, branch: true });
    if (node) slot.append(node.element);
    slot.hidden = !slot.firstChild;
  };
  render(o.initial);
  select.addEventListener("change", () => {
    const carry = node ? node.read([]) : undefined;
    const b = branches[Number(select.value)];
    render(carry !== undefined && matches(carry, b, ctx) ? carry : undefined);
  });
  return {
    element: wrap,
    empty: () => select.value === "" || (Number(select.value) === nullAt && omitNull),
    read(errs) {
      if (select.value === "") return undefined;
      if (Number(select.value) === nullAt) return omitNull ? undefined : null;
      return node.read(errs);
    },
  };
}

function objectNode(ctx, s, path, o) {
  const wrap = el("fieldset", "cf-object");
  if (!(o.root && !s.title)) {
    const legend = el("legend", "cf-legend", o.label);
    wrap.append(legend);
    requiredStar(legend, o.required && !o.root && !o.branch);
  }
  help(ctx, s, wrap, path, []);
  const required = new Set(Array.isArray(s.required) ? s.required : []);
  const init = isObj(o.initial) ? o.initial : {};
  const kids = Object.entries(s.properties).map(([key, ps]) => {
    const label = isObj(ps) && typeof ps.title === "string" && ps.title ? ps.title : key;
    const node = build(ctx, ps, [...path, key],
      { label, required: required.has(key), initial: own(init, key) ? init[key] : undefined, depth: o.depth,
        noDefault: o.noDefault || (isObj(o.initial) && !own(init, key)) });
    wrap.append(node.element);
    return [key, node];
  });
  const empty = () => kids.every(([, n]) => n.empty());
  return {
    element: wrap,
    empty,
    read(errs) {
      if (!o.required && empty()) return undefined;
      const out = {};
      for (const [key, node] of kids) {
        const v = node.read(errs);
        if (v !== undefined) out[key] = v;
      }
      return out;
    },
  };
}

function arrayNode(ctx, s, path, o) {
  const wrap = el("fieldset", "cf-array");
  const legend = el("legend", "cf-legend", o.label);
  requiredStar(legend, o.required && !o.root && !o.branch);
  wrap.append(legend);
  help(ctx, s, wrap, path, []);
  const list = el("ol", "cf-items");
  const add = el("button", "cf-button cf-add", "add");
  add.type = "button";
  add.dataset.action = "add-item";
  add.setAttribute("aria-label", `add to ${o.label}`);
  wrap.append(list, add);
  const mark = errorSlot(ctx, wrap, []);
  const max = Number.isInteger(s.maxItems) ? s.maxItems : Infinity;
  const min = Number.isInteger(s.minItems) ? s.minItems : 0;
  let items = [];
  const render = (values) => {
    release(ctx, list);
    list.replaceChildren();
    items = values.map((v, i) => {
      const li = el("li", "cf-item");
      const node = build(ctx, s.items, [...path, i], { label: `${o.label} ${i + 1}`, required: true, initial: v, depth: o.depth });
      const remove = el("button", "cf-button cf-remove", "remove");
      remove.type = "button";
      remove.dataset.action = "remove-item";
      remove.setAttribute("aria-label", `remove ${o.label} ${i + 1}`);
      remove.addEventListener("click", () => {
        const now = items.map((n) => n.read([]));
        now.splice(i, 1);
        render(now);
      });
      li.append(node.element, remove);
      list.append(li);
      return node;
    });
    add.disabled = items.length >= max;
  };
  const start = Array.isArray(o.initial) ? o.initial : [];
  render(start.length >= min ? start : [...start, ...Array(min - start.length).fill(undefined)]);
  add.addEventListener("click", () => {
    render([...items.map((n) => n.read([])), undefined]);
    const first = list.lastElementChild && list.lastElementChild.querySelector("input, select, textarea");
    if (first) first.focus();
  });
  return {
    element: wrap,
    empty: () => items.length === 0,
    read(errs) {
      if (!o.required && items.length === 0) return undefined;
      const out = [];
      items.forEach((n) => { const v = n.read(errs); if (v !== undefined) out.push(v); });
      const name = pathName(path);
      if (items.length < min) errs.push({ name, msg: `must have at least ${min} item(s)`, mark });
      else if (items.length > max) errs.push({ name, msg: `must have at most ${max} item(s)`, mark });
      else if (s.uniqueItems && new Set(out.map((v) => JSON.stringify(v))).size !== out.length) {
        errs.push({ name, msg: "items must be unique", mark });
      }
      return out;
    },
  };
}

function tupleNode(ctx, s, path, o) {
  const wrap = el("fieldset", "cf-array cf-tuple");
  wrap.append(el("legend", "cf-legend", o.label));
  help(ctx, s, wrap, path, []);
  const init = Array.isArray(o.initial) ? o.initial : [];
  const kids = s.prefixItems.map((ps, i) => {
    const node = build(ctx, ps, [...path, i], { label: `${o.label} ${i + 1}`, required: true, initial: init[i], depth: o.depth });
    wrap.append(node.element);
    return node;
  });
  return {
    element: wrap,
    empty: () => kids.every((n) => n.empty()),
    read(errs) {
      if (!o.required && kids.every((n) => n.empty())) return undefined;
      return kids.map((n) => n.read(errs));
    },
  };
}

function rawNode(ctx, s, path, o) {
  const area = el("textarea", "cf-raw");
  area.rows = 4;
  area.spellcheck = false;
  const type = isObj(s) && typeof s.type === "string" ? s.type : null;
  if (o.initial !== undefined) area.value = JSON.stringify(o.initial, null, 2);
  else if (type === "object" && o.required) area.value = "{}";
  else if (type === "array" && o.required) area.value = "[]";
  const f = field(ctx, s, path, o, area);
  f.wrap.classList.add("cf-raw-field");
  area.placeholder = "JSON";
  const names = { object: "an object", array: "a list", string: "a string", integer: "a whole number",
    number: "a number", boolean: "true or false", null: "null" };
  return {
    element: f.wrap,
    empty: () => area.value.trim() === "",
    read(errs) {
      const text = area.value.trim();
      if (!text) {
        if (o.required) f.err(errs, "required (JSON)");
        return undefined;
      }
      let v;
      try { v = JSON.parse(text); } catch (e) { f.err(errs, `invalid JSON: ${e.message}`); return undefined; }
      if (type && !typeOk(v, type)) f.err(errs, `must be ${names[type] || type}`);
      return v;
    },
  };
}

const BUILDERS = {
  string: stringNode, integer: numberNode, number: numberNode, boolean: booleanNode,
  null: nullNode, enum: enumNode, choice: choiceNode, object: objectNode, array: arrayNode,
  tuple: tupleNode, raw: rawNode,
};

/** A form for `schema`; `value` (optional) prefills it instead of the schema's defaults. */
export function schemaForm(schema, { idPrefix = "f", value } = {}) {
  const form = el("form", "cf-form");
  form.noValidate = true;
  form.autocomplete = "off";
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    form.dispatchEvent(new CustomEvent("cf-submit", { bubbles: true }));
  });
  const prefix = String(idPrefix).replace(/[^A-Za-z0-9_-]/g, "_") || "f";
  const ctx = { root: schema, prefix, ids: new Set(), marks: [] };
  const top = schema === null || schema === undefined || schema === false ? null : deref(schema, ctx);
  const structured = top !== null && kind(top) !== "raw";
  const make = (initial) => build(ctx, schema, [], { required: true, initial, depth: 0, root: true });
  const body = el("div", "cf-body");
  let node = make(value);
  let raw = null;
  let warned = null;
  body.append(node.element);
  const note = el("p", "cf-note");
  note.hidden = true;
  if (structured) {
    const bar = el("div", "cf-toolbar");
    const toggle = el("button", "cf-button cf-raw-toggle", "raw JSON");
    toggle.type = "button";
    toggle.dataset.action = "raw-toggle";
    toggle.setAttribute("aria-pressed", "false");
    toggle.addEventListener("click", () => {
      note.hidden = true;
      if (!raw) {
        const current = node.read([]);
        release(ctx, body);
        raw = rawNode(ctx, {}, [], { label: "raw JSON", required: true, initial: current, depth: 0 });
        body.replaceChildren(raw.element);
        toggle.textContent = "form";
        toggle.setAttribute("aria-pressed", "true");
        return;
      }
      const errs = [];
      const parsed = raw.read(errs);
      if (errs.length) { errs[0].mark.set(errs[0].msg); return; }
      const text = JSON.stringify(parsed);
      release(ctx, body);
      const candidate = make(parsed);
      if (JSON.stringify(candidate.read([])) !== text && warned !== text) {
        release(ctx, candidate.element);
        warned = text;
        note.textContent = "This JSON does not fit the form: some values would be lost. Press \u201cform\u201d again to switch anyway.";
        note.hidden = false;
        for (const c of raw.element.querySelectorAll("[id]")) ctx.ids.add(c.id);
        return;
      }
      warned = null;
      node = candidate;
      raw = null;
      body.replaceChildren(node.element);
      toggle.textContent = "raw JSON";
      toggle.setAttribute("aria-pressed", "false");
    });
    bar.append(toggle);
    form.append(bar);
  }
  form.append(body, note);
  return {
    element: form,
    read() {
      ctx.marks = ctx.marks.filter((m) => m.wrap.isConnected);
      for (const m of ctx.marks) m.clear();
      const errs = [];
      let v = (raw || node).read(errs);
      if (!errs.length && v === undefined) errs.push({ name: "value", msg: "required", mark: null });
      for (const e of errs) if (e.mark) e.mark.set(e.msg);
      if (errs.length) return { ok: false, errors: errs.map((e) => `${e.name}: ${e.msg}`) };
      return { ok: true, value: v };
    },
  };
}
