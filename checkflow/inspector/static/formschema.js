// Schema helpers of form.js: $ref resolution, the kind of control a schema needs, whether a
// value fits a schema (to pick an anyOf branch), the names of paths and branches.
// Pure functions over the schema; nothing here touches the page.

export const REF = Symbol("ref");

export const isObj = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
export const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
export const clone = (v) => (v === undefined ? undefined : JSON.parse(JSON.stringify(v)));
export const own = (o, k) => isObj(o) && Object.prototype.hasOwnProperty.call(o, k);

/** "value" for the root, then a.b, a[0], a["odd key"]. */
export function pathName(path) {
  let out = path.length && typeof path[0] === "number" ? "value" : "";
  for (const seg of path) {
    if (typeof seg === "number") out += `[${seg}]`;
    else if (/^[A-Za-z_$][\w$-]*$/.test(seg)) out += (out ? "." : "") + seg;
    else out += `[${JSON.stringify(seg)}]`;
  }
  return out || "value";
}

function pointer(root, ref) {
  if (ref === "#") return root;
  if (!ref.startsWith("#/")) return undefined;
  let node = root;
  for (const raw of ref.slice(2).split("/")) {
    const key = decodeURIComponent(raw).replace(/~1/g, "/").replace(/~0/g, "~");
    if (!own(node, key)) return undefined;
    node = node[key];
  }
  return node;
}

/** The schema with $ref / single allOf followed (sibling keys win), type lists as anyOf. */
export function deref(schema, ctx) {
  let s = schema;
  let name = null;
  for (let guard = 0; isObj(s); guard++) {
    if (guard > 32) return null;
    if (typeof s.$ref === "string") {
      const { $ref, ...rest } = s;
      const target = pointer(ctx.root, $ref);
      if (target !== true && !isObj(target)) return null;
      name = rest.title || $ref.split("/").pop();
      s = { ...(isObj(target) ? target : {}), ...rest };
    } else if (Array.isArray(s.allOf) && s.allOf.length === 1) {
      const { allOf, ...rest } = s;
      s = { ...(isObj(allOf[0]) ? allOf[0] : {}), ...rest };
    } else break;
  }
  if (isObj(s) && Array.isArray(s.type)) {
    const { type, title, description, default: dflt, ...rest } = s;
    s = { anyOf: type.map((t) => ({ ...rest, type: t })), title, description };
    if (dflt !== undefined) s.default = dflt;
  }
  if (isObj(s) && name) s = { ...s, [REF]: name };
  return s === true || s === undefined ? {} : s;
}

export function kind(s) {
  if (!isObj(s)) return "raw";
  if (own(s, "const")) return "enum";
  if (Array.isArray(s.enum) && s.enum.length) return "enum";
  if (Array.isArray(s.anyOf) && s.anyOf.length) return "choice";
  if (Array.isArray(s.oneOf) && s.oneOf.length) return "choice";
  const hasProps = isObj(s.properties) && Object.keys(s.properties).length > 0;
  switch (s.type) {
    case "string": case "integer": case "number": case "boolean": case "null": return s.type;
    case "object": return hasProps ? "object" : "raw";
    case "array":
      if (Array.isArray(s.prefixItems)) return s.items === false || s.items === undefined ? "tuple" : "raw";
      return isObj(s.items) ? "array" : "raw";
    case undefined: return hasProps ? "object" : "raw";
    default: return "raw";
  }
}

export function typeOk(v, type) {
  switch (type) {
    case "null": return v === null;
    case "boolean": return typeof v === "boolean";
    case "string": return typeof v === "string";
    case "integer": return Number.isInteger(v);
    case "number": return typeof v === "number";
    case "array": return Array.isArray(v);
    case "object": return isObj(v);
    default: return true;
  }
}

/** Whether v could be a value of schema s (enough to pick an anyOf branch). */
export function matches(v, s, ctx) {
  if (!isObj(s)) return true;
  if (own(s, "const")) return same(v, s.const);
  if (Array.isArray(s.enum)) return s.enum.some((e) => same(e, v));
  const alts = s.anyOf || s.oneOf;
  if (Array.isArray(alts)) return alts.some((b) => matches(v, deref(b, ctx), ctx));
  if (s.type) return typeOk(v, s.type) &&
    (s.type !== "object" || (s.required || []).every((k) => own(v, k)));
  return !isObj(s.properties) || isObj(v);
}

/** A short name for a schema: its title, $ref name or type ("list of string | Line"). */
export function shortLabel(b, ctx, depth = 0) {
  if (!isObj(b)) return null;
  if (b.title) return String(b.title);
  if (b[REF]) return String(b[REF]);
  if (typeof b.$ref === "string") return b.$ref.split("/").pop();
  if (b.type === "null") return "none";
  if (own(b, "const")) return JSON.stringify(b.const);
  if (Array.isArray(b.enum)) return "one of " + b.enum.map((v) => JSON.stringify(v)).join(", ");
  const alts = b.anyOf || b.oneOf;
  if (Array.isArray(alts) && depth < 3) return alts.map((a) => shortLabel(a, ctx, depth + 1) || "any").join(" | ");
  if (b.type === "array" && Array.isArray(b.prefixItems) && depth < 3) {
    return `(${b.prefixItems.map((a) => shortLabel(a, ctx, depth + 1) || "any").join(", ")})`;
  }
  if (b.type === "array") {
    const inner = depth < 3 && isObj(b.items) ? shortLabel(b.items, ctx, depth + 1) : null;
    return inner ? `list of ${inner}` : "list";
  }
  return typeof b.type === "string" ? b.type : null;
}
