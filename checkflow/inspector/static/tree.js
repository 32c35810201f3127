// The snapshot tree: one row per snapshot (oldest at the top), one lane per branch, a line
// to each snapshot's parent. The layout is one pass over the snapshots; the SVG is built in
// a DocumentFragment and attached once.

import { svg, shortId } from "./dom.js";

const SVG_NS = "http://www.w3.org/2000/svg";
export const ROW = 24;
const LANE = 16;
const PAD = 12;
const LANE_COLORS = 8;

/**
 * Lanes for `snapshots` (in row order). A snapshot continues its parent's lane when it is
 * the parent's preferred child (the one toward the good head, else the first); other
 * children get a lane reserved at the parent's row, the lowest free one. A lane is freed at
 * its tip. O(n) apart from the free-lane list (kept sorted; it is as short as the tree is wide).
 */
export function layoutTree(snapshots, headId) {
  const n = snapshots.length;
  const index = new Map();
  for (let i = 0; i < n; i++) index.set(snapshots[i].snapshot_id, i);
  const parent = new Int32Array(n).fill(-1);
  const children = new Array(n);
  for (let i = 0; i < n; i++) {
    const p = index.get(snapshots[i].parent_snapshot_id);
    if (p === undefined || p === i) continue;
    parent[i] = p;
    if (p < i) (children[p] ??= []).push(i);
  }
  // the good head's lineage: its children stay in their parent's lane
  const onLine = new Uint8Array(n);
  let cursor = index.get(headId);
  for (let guard = 0; cursor !== undefined && cursor >= 0 && guard <= n; guard++) {
    onLine[cursor] = 1;
    cursor = parent[cursor];
  }
  const lane = new Int32Array(n).fill(-1);
  const free = [];
  let width = 0;
  const take = () => {
    if (free.length) return free.shift();
    return width++;
  };
  const release = (value) => {
    let lo = 0;
    let hi = free.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (free[mid] < value) lo = mid + 1;
      else hi = mid;
    }
    free.splice(lo, 0, value);
  };
  const hasChildren = new Uint8Array(n);
  for (let i = 0; i < n; i++) {
    if (lane[i] < 0) lane[i] = take();
    const kids = children[i];
    if (!kids) {
      release(lane[i]);
      continue;
    }
    hasChildren[i] = 1;
    let preferred = kids[0];
    for (const k of kids) if (onLine[k]) { preferred = k; break; }
    for (const k of kids) lane[k] = k === preferred ? lane[i] : take();
  }
  return { index, parent, lane, lanes: Math.max(width, 1), hasChildren };
}

let measured = 0;

/** The width of one character of a label (monospace), measured once. */
function measureChar(svgRoot) {
  if (measured) return measured;
  const probe = svg("text", { class: "label", x: 0, y: -50, text: "0123456789abcdef" });
  svgRoot.appendChild(probe);
  const width = probe.getComputedTextLength() / 16;
  probe.remove();
  if (width > 0) measured = width;
  return width > 0 ? width : 7;
}

function describe(snapshot) {
  const meta = snapshot.metadata && typeof snapshot.metadata === "object" ? snapshot.metadata : {};
  const step = meta.superstep ?? "?";
  if (meta.boundary === "input_accepted") return `input · step ${step}`;
  if (meta.boundary === "superstep_completed") return `step ${step}`;
  return meta.boundary ? `${meta.boundary} · ${step}` : `step ${step}`;
}

/**
 * Draw the tree into `svgRoot` (an <svg>, emptied first). Returns a Map snapshot id -> <g>.
 * `marks`: {head, storageHead, tips: Set, selected}.
 */
export function drawTree(svgRoot, snapshots, marks) {
  const charWidth = measureChar(svgRoot);
  const layout = layoutTree(snapshots, marks.head);
  const { parent, lane, lanes } = layout;
  const n = snapshots.length;
  const labelX = PAD + lanes * LANE + 6;
  const width = labelX + 330;
  const height = Math.max(n * ROW + PAD, ROW * 2);
  const x = (i) => PAD + lane[i] * LANE;
  const y = (i) => PAD + i * ROW;

  const band = svg("rect", { class: "selection-band", x: 2, y: -100, width: width - 4, height: ROW, rx: 3 });
  const edges = svg("g", { class: "edges" });
  const nodes = svg("g", { class: "nodes" });
  const fragment = document.createDocumentFragment();
  fragment.append(band, edges, nodes);
  const byId = new Map();
  // one path per lane colour for all the edges: fewer elements to style and lay out
  const paths = Array.from({ length: LANE_COLORS }, () => []);
  // the hot loop builds elements directly (a thousand rows): fixed attribute names only,
  // server values only through setAttribute of data-* and textContent
  const make = (tag, cls) => {
    const node = document.createElementNS(SVG_NS, tag);
    node.setAttribute("class", cls);
    return node;
  };
  const put = (node, name, value) => node.setAttribute(name, String(value));

  for (let i = 0; i < n; i++) {
    const p = parent[i];
    const cx = x(i);
    const cy = y(i);
    if (p >= 0) {
      const xp = x(p);
      const yp = y(p);
      let d;
      if (xp === cx || p > i) d = `M${xp} ${yp}L${cx} ${cy}`;
      else {
        const bend = yp + ROW;
        d = `M${xp} ${yp}C${xp} ${yp + ROW * 0.6} ${cx} ${yp + ROW * 0.4} ${cx} ${bend}` +
          (cy > bend ? `L${cx} ${cy}` : "");
      }
      paths[lane[i] % LANE_COLORS].push(d);
    }
    const snapshot = snapshots[i];
    const id = snapshot.snapshot_id;
    const isHead = id === marks.head;
    const isStorageHead = id === marks.storageHead && marks.storageHead !== marks.head;
    const isTip = marks.tips.has(id);
    const g = make("g", "snapshot-node");
    g.setAttribute("data-testid", "snapshot-node");
    g.setAttribute("data-snapshot-id", String(id));
    g.setAttribute("tabindex", "0");
    if (isHead) g.setAttribute("data-head", "true");
    if (id === marks.storageHead) g.setAttribute("data-storage-head", "true");
    if (isTip) g.setAttribute("data-tip", "true");
    if (id === marks.selected) g.setAttribute("data-selected", "true");
    // coordinates on the shapes, not a transform per row: a thousand transforms make the
    // compositor's layerization step take hundreds of milliseconds
    if (isStorageHead) {
      const mark = make("rect", "mark-storage-head");
      put(mark, "x", cx - 7); put(mark, "y", cy - 7); put(mark, "width", 14); put(mark, "height", 14);
      g.appendChild(mark);
    }
    if (isHead) {
      const ring = make("circle", "mark-head");
      put(ring, "cx", cx); put(ring, "cy", cy); put(ring, "r", 8);
      g.appendChild(ring);
    }
    const dot = make("circle", `dot lane-${lane[i] % LANE_COLORS}${isTip ? " tip" : ""}`);
    put(dot, "cx", cx); put(dot, "cy", cy); put(dot, "r", isHead ? 5 : 4.5);
    g.appendChild(dot);
    // one <text> per row (tspans cost twice as much to lay out); the few tags after it
    // are placed by the label's length in monospace characters
    const status = snapshot.metadata && snapshot.metadata.status;
    const text = `${shortId(id)}  ${describe(snapshot)}${status ? ` · ${status}` : ""}`;
    const label = make("text", "label");
    put(label, "x", labelX); put(label, "y", cy + 4);
    label.textContent = text;
    g.appendChild(label);
    let tagX = labelX + text.length * charWidth + 10;
    const tag = (cls, word) => {
      g.appendChild(svg("text", { class: `tag ${cls}`, x: tagX, y: cy + 4, text: word }));
      tagX += word.length * charWidth + 10;
    };
    if (isHead) tag("tag-head", "head");
    if (isStorageHead) tag("tag-storage", "storage head");
    if (isTip && !isHead && !isStorageHead) tag("tag-tip", "tip");
    nodes.appendChild(g);
    byId.set(id, g);
  }
  paths.forEach((list, colour) => {
    if (list.length) edges.appendChild(svg("path", { d: list.join(""), class: `edge lane-${colour}` }));
  });

  while (svgRoot.firstChild) svgRoot.removeChild(svgRoot.firstChild);
  svgRoot.setAttribute("width", String(width));
  svgRoot.setAttribute("height", String(height));
  svgRoot.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svgRoot.appendChild(fragment);
  const result = {
    byId,
    rowOf: (id) => layout.index.get(id) ?? -1,
    band: (id) => {
      const row = layout.index.get(id);
      band.setAttribute("y", String(row === undefined ? -100 : y(row) - ROW / 2));
    },
  };
  result.band(marks.selected);
  return result;
}

/** Move the selection mark to `id` (toggling data-selected on at most two nodes). */
export function markSelected(tree, previous, id) {
  const { byId } = tree;
  if (previous && byId.has(previous)) byId.get(previous).removeAttribute("data-selected");
  if (id && byId.has(id)) byId.get(id).setAttribute("data-selected", "true");
  tree.band(id);
}

/** Scroll the tree's panel so row `row` is visible. */
export function scrollToRow(panel, row) {
  if (row < 0) return;
  const top = PAD + row * ROW - ROW / 2;
  const bottom = top + ROW;
  if (top < panel.scrollTop || bottom > panel.scrollTop + panel.clientHeight) {
    panel.scrollTop = Math.max(0, top - panel.clientHeight / 2);
  }
}
