// The API reference page (/docs/): draws the server's /openapi.json as text.
// Everything in the document is untrusted: it reaches the page through textContent only, and
// the only links are fragment anchors (#op-..., #schema-..., #tag-...) built and sanitized here.

const METHODS = ["get", "put", "post", "patch", "delete", "head", "options", "trace"];
const TOKEN_KEY = "checkflow-inspector-token"; // the inspector's, when the user entered one

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

const isObj = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
const own = (o, k) => isObj(o) && Object.prototype.hasOwnProperty.call(o, k);
const str = (v) => (typeof v === "string" ? v : v === undefined || v === null ? "" : String(v));

/** Text with ``code`` / `code` spans as <code>, newlines kept by CSS. */
function richText(parent, text) {
  String(text).split(/``(.+?)``|`([^`]+)`/s).forEach((part, i) => {
    if (part === undefined || part === "") return;
    parent.append(i % 3 === 0 ? document.createTextNode(part) : el("code", null, part));
  });
  return parent;
}

function slug(text) {
  return String(text).replace(/[^A-Za-z0-9_-]+/g, "-").replace(/-{2,}/g, "-").replace(/^-+|-+$/g, "") || "x";
}

const usedIds = new Set();
function anchorId(prefix, text) {
  const base = `${prefix}-${slug(text)}`;
  let id = base;
  for (let n = 2; usedIds.has(id); n++) id = `${base}-${n}`;
  usedIds.add(id);
  return id;
}

function link(hashId, text, cls) {
  const a = el("a", cls, text);
  a.setAttribute("href", `#${hashId}`); // our own sanitized id, never a server URL
  return a;
}

/** The folder the docs page hangs under: /docs/ -> /, /proxy/docs -> /proxy/. */
function rootUrl() {
  const url = new URL(window.location.href);
  url.hash = "";
  url.search = "";
  const stripped = url.pathname.replace(/\/docs\/?$/, "/");
  url.pathname = stripped === url.pathname ? new URL(".", url).pathname : stripped;
  return url;
}

async function fetchDocument() {
  const headers = { accept: "application/json" };
  try {
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (token) headers.Authorization = `Bearer ${token}`;
  } catch { /* storage disabled */ }
  const response = await fetch(new URL("openapi.json", rootUrl()), { credentials: "same-origin", headers });
  if (!response.ok) throw new Error(`openapi.json answered ${response.status} ${response.statusText}`.trim());
  const doc = await response.json();
  if (!isObj(doc)) throw new Error("openapi.json is not an object");
  return doc;
}

function resolve(doc, ref) {
  if (typeof ref !== "string" || !ref.startsWith("#/")) return undefined;
  let node = doc;
  for (const raw of ref.slice(2).split("/")) {
    let key;
    try { key = decodeURIComponent(raw); } catch { return undefined; }
    key = key.replace(/~1/g, "/").replace(/~0/g, "~");
    if (!own(node, key)) return undefined;
    node = node[key];
  }
  return node;
}

/** An object that may be a {$ref}: the target (parameters, bodies, responses). */
function deref(doc, value, depth = 0) {
  if (isObj(value) && typeof value.$ref === "string" && depth < 16) {
    return deref(doc, resolve(doc, value.$ref), depth + 1);
  }
  return isObj(value) ? value : {};
}

const refName = (ref) => str(ref).split("/").pop() || str(ref);

// ---------------------------------------------------------------- schemas as a tree

function typeLabel(s) {
  if (s === true || s === undefined || (isObj(s) && Object.keys(s).every((k) => ["title", "description", "default"].includes(k)))) return "any";
  if (s === false) return "nothing";
  if (!isObj(s)) return "?";
  if (typeof s.$ref === "string") return refName(s.$ref);
  if (own(s, "const")) return `const ${JSON.stringify(s.const)}`;
  if (Array.isArray(s.enum)) return "enum";
  const alts = s.anyOf || s.oneOf;
  if (Array.isArray(alts)) return alts.map(typeLabel).join(" | ");
  if (Array.isArray(s.allOf)) return s.allOf.map(typeLabel).join(" & ");
  if (Array.isArray(s.type)) return s.type.map(str).join(" | ");
  if (s.type === "array") {
    if (!isObj(s.items)) return "array";
    const inner = typeLabel(s.items);
    return `array of ${inner.includes(" ") ? `(${inner})` : inner}`;
  }
  if (s.type) return str(s.type);
  return isObj(s.properties) ? "object" : "any";
}

function facts(s) {
  const out = [];
  if (!isObj(s)) return out;
  const add = (key, text) => { if (own(s, key)) out.push(text(s[key])); };
  add("format", (v) => `format ${str(v)}`);
  add("minimum", (v) => `≥ ${str(v)}`);
  add("exclusiveMinimum", (v) => `> ${str(v)}`);
  add("maximum", (v) => `≤ ${str(v)}`);
  add("exclusiveMaximum", (v) => `< ${str(v)}`);
  add("multipleOf", (v) => `multiple of ${str(v)}`);
  add("minLength", (v) => `min length ${str(v)}`);
  add("maxLength", (v) => `max length ${str(v)}`);
  add("pattern", (v) => `pattern ${str(v)}`);
  add("minItems", (v) => `min items ${str(v)}`);
  add("maxItems", (v) => `max items ${str(v)}`);
  if (s.uniqueItems === true) out.push("unique items");
  if (s.additionalProperties === false) out.push("no other fields");
  if (s.deprecated === true) out.push("deprecated");
  if (s.readOnly === true) out.push("read-only");
  add("default", (v) => `default ${JSON.stringify(v)}`);
  return out;
}

function chip(text, cls = "") {
  return el("span", `type ${cls}`.trim(), text);
}

/** The view of one schema: its type line, facts, description and (collapsible) children. */
function schemaView(doc, s, depth, trail, { open = false } = {}) {
  const box = el("div", "schema");
  if (isObj(s) && typeof s.$ref === "string") {
    const name = refName(s.$ref);
    const target = resolve(doc, s.$ref);
    const details = el("details", "ref");
    const summary = el("summary");
    summary.append(chip(name, "ref"));
    details.append(summary);
    box.append(details);
    if (target === undefined) { summary.append(el("span", "note", " (not found)")); return box; }
    if (trail.includes(name)) { summary.append(el("span", "note", " (recursive)")); return box; }
    let filled = false;
    const fill = () => {
      if (filled) return;
      filled = true;
      details.append(schemaView(doc, target, depth + 1, [...trail, name]));
    };
    details.addEventListener("toggle", () => details.open && fill());
    if (open && depth < 6) { details.open = true; fill(); }
    return box;
  }
  const line = el("div", "sig");
  const alts = isObj(s) ? s.anyOf || s.oneOf : null;
  const items = isObj(s) && (s.type === "array" || own(s, "items")) ? s.items : undefined;
  const refItems = isObj(items) && typeof items.$ref === "string";
  if (Array.isArray(alts)) {
    if (s.oneOf) line.append(el("span", "alts-head", "one of"));
    alts.forEach((alt, i) => {
      if (i) line.append(el("span", "bar", "|"));
      line.append(schemaView(doc, alt, depth + 1, trail));
    });
  } else if (refItems) {
    line.append(chip("array of"), schemaView(doc, items, depth + 1, trail));
  } else line.append(chip(typeLabel(s)));
  if (isObj(s) && Array.isArray(s.enum)) {
    const values = el("span", "enum");
    s.enum.forEach((v) => values.append(el("code", "enum-value", JSON.stringify(v))));
    line.append(values);
  }
  for (const fact of facts(s)) line.append(el("span", "fact", fact));
  box.append(line);
  if (!isObj(s) || depth > 24) return box;
  if (typeof s.description === "string" && s.description) box.append(richText(el("p", "desc"), s.description));
  if (Array.isArray(s.allOf)) s.allOf.forEach((part) => box.append(schemaView(doc, part, depth + 1, trail, { open })));
  if (isObj(s.properties) && Object.keys(s.properties).length) {
    const required = new Set(Array.isArray(s.required) ? s.required.map(str) : []);
    const list = el("ul", "props");
    for (const [name, prop] of Object.entries(s.properties)) {
      const item = el("li", "prop");
      const head = el("div", "prop-head");
      head.append(el("code", "prop-name", name));
      if (required.has(name)) head.append(el("span", "required", "required"));
      item.append(head, schemaView(doc, prop, depth + 1, trail));
      list.append(item);
    }
    const count = Object.keys(s.properties).length;
    if (depth >= 3) {
      const more = el("details", "fields");
      more.append(el("summary", null, `${count} field${count === 1 ? "" : "s"}`), list);
      box.append(more);
    } else box.append(list);
  }
  if (!refItems && isObj(items) && (items.properties || items.anyOf || items.oneOf || items.items)) {
    const sub = el("div", "sub");
    sub.append(el("span", "sub-head", "items"), schemaView(doc, items, depth + 1, trail));
    box.append(sub);
  }
  if (Array.isArray(s.prefixItems)) {
    s.prefixItems.forEach((p, i) => {
      const sub = el("div", "sub");
      sub.append(el("span", "sub-head", `item ${i + 1}`), schemaView(doc, p, depth + 1, trail));
      box.append(sub);
    });
  }
  if (isObj(s.additionalProperties) && Object.keys(s.additionalProperties).length) {
    const sub = el("div", "sub");
    sub.append(el("span", "sub-head", "other fields"), schemaView(doc, s.additionalProperties, depth + 1, trail));
    box.append(sub);
  }
  return box;
}

// ---------------------------------------------------------------- operations

function collectOperations(doc) {
  const ops = [];
  const paths = isObj(doc.paths) ? doc.paths : {};
  for (const [path, rawItem] of Object.entries(paths)) {
    const item = deref(doc, rawItem);
    const shared = Array.isArray(item.parameters) ? item.parameters : [];
    for (const method of METHODS) {
      const op = item[method];
      if (!isObj(op)) continue;
      const params = new Map();
      for (const raw of [...shared, ...(Array.isArray(op.parameters) ? op.parameters : [])]) {
        const p = deref(doc, raw);
        params.set(`${str(p.in)}:${str(p.name)}`, p);
      }
      const tags = Array.isArray(op.tags) ? op.tags.map(str).filter(Boolean) : [];
      ops.push({ path, method, op, params: [...params.values()], tag: tags[0] || "other" });
    }
  }
  return ops;
}

function pathView(path) {
  const code = el("code", "path");
  path.split(/(\{[^}]*\})/).forEach((part, i) => {
    if (part) code.append(i % 2 ? el("span", "path-param", part) : document.createTextNode(part));
  });
  return code;
}

/** The path as text with a line-break chance after each "/". */
function pathBreaks(path) {
  const span = el("span", "idx-path");
  path.split("/").forEach((part, i) => {
    if (i) span.append("/", el("wbr"));
    span.append(part);
  });
  return span;
}

function section(title) {
  const box = el("div", "block");
  box.append(el("h4", null, title));
  return box;
}

function contentView(doc, content, open) {
  const box = el("div", "contents");
  for (const [media, raw] of Object.entries(isObj(content) ? content : {})) {
    const entry = el("div", "media");
    entry.append(el("code", "media-type", media));
    const m = isObj(raw) ? raw : {};
    if (own(m, "schema")) entry.append(schemaView(doc, m.schema, 0, [], { open }));
    box.append(entry);
  }
  return box;
}

function operationView(doc, entry) {
  const { op, method, path } = entry;
  const sec = el("section", "op");
  sec.id = entry.id;
  sec.dataset.testid = "docs-operation";
  sec.dataset.method = method.toUpperCase();
  sec.dataset.path = path;
  const head = el("h3", "op-head");
  head.append(el("span", `method method-${method}`, method.toUpperCase()), pathView(path));
  if (op.summary) head.append(el("span", "summary", str(op.summary)));
  if (op.deprecated === true) head.append(el("span", "badge deprecated", "deprecated"));
  sec.append(head);
  if (op.description) sec.append(richText(el("p", "desc"), str(op.description)));
  if (op.operationId) {
    const id = el("p", "opid", "operationId ");
    id.append(el("code", null, str(op.operationId)));
    sec.append(id);
  }
  if (Array.isArray(op.security)) {
    const names = op.security.flatMap((req) => (isObj(req) ? Object.keys(req) : []));
    sec.append(el("p", "auth", names.length ? `authentication: ${names.join(", ")}` : "no authentication"));
  }
  if (entry.params.length) {
    const box = section("Parameters");
    const table = el("table", "params");
    const hrow = el("tr");
    for (const h of ["name", "in", "type", "description"]) hrow.append(el("th", null, h));
    table.append(el("thead"), el("tbody"));
    table.tHead.append(hrow);
    for (const p of entry.params) {
      const row = el("tr");
      const name = el("td");
      name.append(el("code", "prop-name", str(p.name)));
      if (p.required === true) name.append(el("span", "required", "required"));
      const type = el("td");
      type.append(schemaView(doc, own(p, "schema") ? p.schema : {}, 0, []));
      const desc = el("td");
      if (p.description) richText(desc, str(p.description));
      row.append(name, el("td", "param-in", str(p.in)), type, desc);
      table.tBodies[0].append(row);
    }
    box.append(table);
    sec.append(box);
  }
  if (own(op, "requestBody")) {
    const body = deref(doc, op.requestBody);
    const box = section("Request body");
    if (body.required === true) box.firstChild.append(el("span", "required", "required"));
    if (body.description) box.append(richText(el("p", "desc"), str(body.description)));
    box.append(contentView(doc, body.content, true));
    sec.append(box);
  }
  const responses = isObj(op.responses) ? op.responses : {};
  if (Object.keys(responses).length) {
    const box = section("Responses");
    const list = el("ul", "responses");
    const groups = new Map(); // statuses whose answers are the same, shown once
    for (const [status, raw] of Object.entries(responses)) {
      const r = deref(doc, raw);
      const key = JSON.stringify(r);
      if (!groups.has(key)) groups.set(key, { r, statuses: [] });
      groups.get(key).statuses.push(status);
    }
    for (const { r, statuses } of groups.values()) {
      const item = el("li", "response");
      item.dataset.status = statuses.join(" ");
      const line = el("div", "response-head");
      const codes = el("span", "statuses");
      for (const status of statuses) {
        const kind = /^[1-5]/.test(status) ? `s${status[0]}xx` : "sother";
        codes.append(el("span", `status ${kind}`, status));
      }
      line.append(codes);
      if (r.description) line.append(richText(el("span", "desc"), str(r.description)));
      item.append(line, contentView(doc, r.content, statuses.some((st) => /^2/.test(st))));
      list.append(item);
    }
    box.append(list);
    sec.append(box);
  }
  return sec;
}

// ---------------------------------------------------------------- the page

function renderHeader(doc) {
  const info = isObj(doc.info) ? doc.info : {};
  const header = document.getElementById("docs-header");
  const title = str(info.title) || "API reference";
  document.title = `${title} · API reference`;
  const h1 = el("h1", null, title);
  const meta = el("p", "meta");
  if (info.version !== undefined) meta.append(el("span", "badge", `version ${str(info.version)}`));
  if (doc.openapi) meta.append(el("span", "badge", `OpenAPI ${str(doc.openapi)}`));
  header.replaceChildren(h1, meta);
  if (info.description) header.append(richText(el("p", "desc"), str(info.description)));
  const schemes = isObj(doc.components) && isObj(doc.components.securitySchemes) ? doc.components.securitySchemes : {};
  for (const [name, raw] of Object.entries(schemes)) {
    const s = deref(doc, raw);
    const line = el("p", "auth", `authentication ${name}: ${[s.type, s.scheme, s.bearerFormat, s.in, s.name].filter(Boolean).map(str).join(" ")}`);
    if (s.description) line.append(document.createTextNode(" — "), richText(el("span"), str(s.description)));
    header.append(line);
  }
}

function render(doc) {
  renderHeader(doc);
  const ops = collectOperations(doc);
  const order = [];
  const tagInfo = new Map();
  for (const t of Array.isArray(doc.tags) ? doc.tags : []) {
    if (isObj(t) && t.name) tagInfo.set(str(t.name), t);
  }
  for (const name of tagInfo.keys()) if (ops.some((o) => o.tag === name)) order.push(name);
  for (const o of ops) if (!order.includes(o.tag)) order.push(o.tag);

  const main = document.getElementById("docs-ops");
  const index = document.getElementById("docs-index");
  const groups = [];
  main.replaceChildren();
  index.replaceChildren();
  for (const tag of order) {
    const tagId = anchorId("tag", tag);
    const group = el("section", "tag");
    group.id = tagId;
    group.dataset.tag = tag;
    const h2 = el("h2", null, tag);
    group.append(h2);
    const t = tagInfo.get(tag);
    if (t && t.description) group.append(richText(el("p", "desc"), str(t.description)));
    const idxGroup = el("div", "idx-tag");
    idxGroup.append(link(tagId, tag, "idx-tag-name"));
    const idxList = el("ul");
    idxGroup.append(idxList);
    const members = [];
    for (const entry of ops.filter((o) => o.tag === tag)) {
      entry.id = anchorId("op", entry.op.operationId || `${entry.method}-${entry.path}`);
      entry.section = operationView(doc, entry);
      group.append(entry.section);
      const li = el("li");
      const a = link(entry.id, "", "idx-op");
      a.append(el("span", `method-mini method-${entry.method}`, entry.method.toUpperCase()), pathBreaks(entry.path));
      li.append(a);
      idxList.append(li);
      entry.indexItem = li;
      entry.text = [entry.method, entry.path, entry.op.summary, entry.op.description, entry.op.operationId, tag]
        .map(str).join(" ").toLowerCase();
      members.push(entry);
    }
    groups.push({ group, idxGroup, members });
    main.append(group);
    index.append(idxGroup);
  }
  if (!ops.length) main.append(el("p", "note", "This document has no operations."));

  const schemas = isObj(doc.components) && isObj(doc.components.schemas) ? doc.components.schemas : {};
  const schemaBox = document.getElementById("docs-schemas");
  const schemaEntries = [];
  schemaBox.replaceChildren();
  if (Object.keys(schemas).length) {
    schemaBox.append(el("h2", null, "Schemas"));
    const idxGroup = el("div", "idx-tag");
    idxGroup.append(el("span", "idx-tag-name", "schemas"));
    const idxList = el("ul");
    idxGroup.append(idxList);
    for (const [name, s] of Object.entries(schemas)) {
      const id = anchorId("schema", name);
      const item = el("section", "schema-entry");
      item.id = id;
      item.dataset.testid = "docs-schema";
      item.dataset.schema = name;
      item.append(el("h3", null, name), schemaView(doc, s, 0, [name]));
      schemaBox.append(item);
      const li = el("li");
      li.append(link(id, name, "idx-op"));
      idxList.append(li);
      schemaEntries.push({ item, li, text: name.toLowerCase() });
    }
    index.append(idxGroup);
  }

  const filter = document.getElementById("docs-filter");
  const count = document.getElementById("docs-count");
  const apply = () => {
    const q = filter.value.trim().toLowerCase();
    let shown = 0;
    for (const { group, idxGroup, members } of groups) {
      let any = false;
      for (const m of members) {
        const hit = !q || m.text.includes(q);
        m.section.hidden = !hit;
        m.indexItem.hidden = !hit;
        any ||= hit;
        if (hit) shown++;
      }
      group.hidden = !any;
      idxGroup.hidden = !any;
    }
    for (const s of schemaEntries) {
      const hit = !q || s.text.includes(q);
      s.item.hidden = !hit;
      s.li.hidden = !hit;
    }
    count.textContent = q ? `${shown} of ${ops.length} operations` : `${ops.length} operations`;
  };
  filter.addEventListener("input", apply);
  apply();

  if (window.location.hash.length > 1) {
    let target = null;
    try { target = document.getElementById(decodeURIComponent(window.location.hash.slice(1))); } catch { /* bad hash */ }
    if (target) target.scrollIntoView();
  }
}

async function main() {
  delete document.body.dataset.ready;
  const error = document.getElementById("docs-error");
  try {
    render(await fetchDocument());
    document.body.dataset.ready = "docs";
  } catch (e) {
    error.textContent = `Could not load the API description: ${e && e.message ? e.message : e}`;
    error.hidden = false;
    document.getElementById("docs-header").querySelector(".loading")?.remove();
    document.body.dataset.ready = "docs-error";
  }
}

main();
