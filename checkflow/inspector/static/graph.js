// The workflow graph: layered top to bottom (longest path from `start`, back edges of cycles
// ignored for the layering and drawn on the side), boxes for executors, arrows labelled with
// the edge kind (conditional kinds dashed).

import { svg } from "./dom.js";

const BOX_H = 40;
const LAYER_GAP = 64;
const NODE_GAP = 44; // room for a self-loop between two boxes
const PAD = 20;
const TOP = 34; // room above the first layer for back edges coming in from above
const CHAR = 7.4; // monospace width at the box's font size
const DASHED = new Set(["conditional", "switch_case", "multi_selection"]);

function truncate(text, max) {
  const s = String(text ?? "");
  return s.length > max ? s.slice(0, max - 1) + "…" : s;
}

/** Layers and positions for `graph` ({start, executors, edges}). */
export function layoutGraph(graph) {
  const executors = Array.isArray(graph.executors) ? graph.executors : [];
  const ids = executors.map((e) => String(e.id));
  const index = new Map(ids.map((id, i) => [id, i]));
  const n = ids.length;
  const edges = (Array.isArray(graph.edges) ? graph.edges : [])
    .map((edge) => ({ ...edge, s: index.get(String(edge.source)), t: index.get(String(edge.target)) }))
    .filter((edge) => edge.s !== undefined && edge.t !== undefined);
  const out = Array.from({ length: n }, () => []);
  edges.forEach((edge, k) => out[edge.s].push(k));

  // back edges: an iterative DFS from start, then from any node not reached
  const color = new Uint8Array(n); // 0 new, 1 on the stack, 2 done
  const back = new Set();
  const roots = [];
  const start = index.get(String(graph.start));
  if (start !== undefined) roots.push(start);
  for (let i = 0; i < n; i++) roots.push(i);
  for (const root of roots) {
    if (color[root]) continue;
    const stack = [[root, 0]];
    color[root] = 1;
    while (stack.length) {
      const top = stack[stack.length - 1];
      const [v, next] = top;
      if (next >= out[v].length) {
        color[v] = 2;
        stack.pop();
        continue;
      }
      top[1]++;
      const k = out[v][next];
      const w = edges[k].t;
      if (color[w] === 1) back.add(k);
      else if (color[w] === 0) {
        color[w] = 1;
        stack.push([w, 0]);
      }
    }
  }

  // longest path layering over the forward edges (Kahn's order)
  const indegree = new Int32Array(n);
  edges.forEach((edge, k) => { if (!back.has(k)) indegree[edge.t]++; });
  const layer = new Int32Array(n);
  const queue = [];
  if (start !== undefined && indegree[start] === 0) queue.push(start);
  for (let i = 0; i < n; i++) if (indegree[i] === 0 && i !== start) queue.push(i);
  const order = [];
  for (let head = 0; head < queue.length; head++) {
    const v = queue[head];
    order.push(v);
    for (const k of out[v]) {
      if (back.has(k)) continue;
      const w = edges[k].t;
      layer[w] = Math.max(layer[w], layer[v] + 1);
      if (--indegree[w] === 0) queue.push(w);
    }
  }

  const layers = [];
  for (const v of order) (layers[layer[v]] ??= []).push(v);
  const boxes = executors.map((executor) => {
    const nested = executor.workflow && typeof executor.workflow === "object";
    const title = truncate(executor.id, 40);
    const sub = nested ? `workflow: ${truncate(executor.workflow.name, 34)}` : truncate(executor.type, 40);
    const w = Math.max(90, Math.ceil(Math.max(title.length, sub.length * 0.85) * CHAR) + 24);
    return { executor, title, sub, nested, w, h: BOX_H, x: 0, y: 0 };
  });
  const rowWidth = (row) => row.reduce((sum, v) => sum + boxes[v].w, 0) + NODE_GAP * (row.length - 1);
  const inner = Math.max(160, ...layers.map((row) => (row ? rowWidth(row) : 0)));
  layers.forEach((row, depth) => {
    if (!row) return;
    let xPos = PAD + (inner - rowWidth(row)) / 2;
    for (const v of row) {
      boxes[v].x = xPos;
      boxes[v].y = TOP + depth * (BOX_H + LAYER_GAP);
      xPos += boxes[v].w + NODE_GAP;
    }
  });
  // back edges (and same-layer ones) run down a channel right of every box, one lane each
  const sideways = [];
  edges.forEach((edge, k) => {
    if (edge.s !== edge.t && (back.has(k) || layer[edge.t] <= layer[edge.s])) sideways.push(k);
  });
  const channel = PAD + inner + 30;
  const lanes = new Map(sideways.map((k, i) => [k, channel + i * 14]));
  const width = channel + sideways.length * 14 + (sideways.length ? 150 : 30);
  const height = TOP + PAD + Math.max(1, layers.length) * (BOX_H + LAYER_GAP) - LAYER_GAP + 10;
  return { boxes, edges, back, layer, width, height, start, lanes };
}

function edgePath(edge, k, layout, ports) {
  const a = layout.boxes[edge.s];
  const b = layout.boxes[edge.t];
  if (edge.s === edge.t) {
    // a small loop on the box's right side
    const x = a.x + a.w;
    const y = a.y + a.h / 2;
    return { d: `M${x} ${y - 9}C${x + 30} ${y - 26} ${x + 30} ${y + 26} ${x} ${y + 9}`, lx: x + 2, ly: a.y + a.h + 12 };
  }
  const forward = !layout.back.has(k) && layout.layer[edge.t] > layout.layer[edge.s];
  if (forward) {
    const slot = ports.get(k);
    const x1 = a.x + (a.w * (slot.out + 1)) / (slot.outs + 1);
    const y1 = a.y + a.h;
    const x2 = b.x + (b.w * (slot.in + 1)) / (slot.ins + 1);
    const y2 = b.y;
    const my = (y1 + y2) / 2;
    // the label where edges sharing an end have drifted apart: near the targets of a
    // source with several edges, near the sources of a target with several
    const t = slot.outs > 1 ? 0.72 : slot.ins > 1 ? 0.28 : 0.5;
    const u = 1 - t;
    const bx = u * u * u * x1 + 3 * u * u * t * x1 + 3 * u * t * t * x2 + t * t * t * x2;
    const by = u * u * u * y1 + 3 * u * u * t * my + 3 * u * t * t * my + t * t * t * y2;
    return { d: `M${x1} ${y1}C${x1} ${my} ${x2} ${my} ${x2} ${y2}`, lx: bx, ly: by, anchor: "middle" };
  }
  // a back edge (or a same-layer one): out of the source's right side, along its lane of
  // the right-hand channel, and into the target from above
  const lane = layout.lanes.get(k);
  const x1 = a.x + a.w;
  const y1 = a.y + a.h / 2;
  const x2 = b.x + b.w * 0.75;
  const y2 = b.y;
  const top = b.y - 22;
  return {
    d: `M${x1} ${y1}L${lane - 8} ${y1}Q${lane} ${y1} ${lane} ${y1 - 8}L${lane} ${top + 8}` +
      `Q${lane} ${top} ${lane - 8} ${top}L${x2 + 8} ${top}Q${x2} ${top} ${x2} ${top + 8}L${x2} ${y2}`,
    lx: lane + 4,
    ly: (y1 + top) / 2,
  };
}

/** Draw `graph` into `svgRoot`; returns a Map executor id -> <g>. */
export function drawGraph(svgRoot, graph) {
  const layout = layoutGraph(graph);
  const fragment = document.createDocumentFragment();
  const defs = svg("defs");
  const marker = svg("marker", {
    id: "cf-arrow", viewBox: "0 0 10 10", refX: 9, refY: 5,
    markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse",
  });
  marker.appendChild(svg("path", { d: "M0 0L10 5L0 10z", class: "arrow-head" }));
  defs.appendChild(marker);
  fragment.appendChild(defs);

  // spread the ends of several forward edges along a box's side
  const ports = new Map();
  const outs = new Map();
  const ins = new Map();
  layout.edges.forEach((edge, k) => {
    if (edge.s === edge.t || layout.back.has(k) || layout.layer[edge.t] <= layout.layer[edge.s]) return;
    (outs.get(edge.s) ?? outs.set(edge.s, []).get(edge.s)).push(k);
    (ins.get(edge.t) ?? ins.set(edge.t, []).get(edge.t)).push(k);
  });
  const byX = (end) => (p, q) => layout.boxes[layout.edges[p][end]].x - layout.boxes[layout.edges[q][end]].x;
  for (const list of outs.values()) {
    list.sort(byX("t")).forEach((k, i) => ports.set(k, { out: i, outs: list.length, in: 0, ins: 1 }));
  }
  for (const list of ins.values()) {
    list.sort(byX("s")).forEach((k, i) => Object.assign(ports.get(k), { in: i, ins: list.length }));
  }

  const edgeLayer = svg("g", { class: "graph-edges" });
  const labelLayer = svg("g", { class: "graph-labels" });
  layout.edges.forEach((edge, k) => {
    const { d, lx, ly, anchor } = edgePath(edge, k, layout, ports);
    const kind = String(edge.kind ?? "edge");
    const dashed = DASHED.has(kind);
    edgeLayer.appendChild(svg("path", {
      d,
      class: `graph-edge${dashed ? " dashed" : ""}${layout.back.has(k) ? " back" : ""}`,
      "marker-end": "url(#cf-arrow)",
      "data-kind": kind,
    }));
    const label = edge.label && String(edge.label) !== kind ? `${kind}: ${truncate(edge.label, 24)}` : kind;
    labelLayer.appendChild(svg("text", {
      class: kind === "edge" && label === kind ? "edge-label plain" : "edge-label",
      x: anchor ? lx : lx + 4, y: ly + 3, "text-anchor": anchor ?? "start", text: label,
    }));
  });
  fragment.appendChild(edgeLayer);

  const nodeLayer = svg("g", { class: "graph-nodes" });
  const byId = new Map();
  layout.boxes.forEach((box, v) => {
    const id = String(box.executor.id);
    const g = svg("g", {
      testid: "executor-node",
      class: `executor-node${box.nested ? " nested" : ""}${v === layout.start ? " start" : ""}`,
      "data-executor-id": id,
      transform: `translate(${box.x} ${box.y})`,
    });
    if (box.nested) {
      g.appendChild(svg("rect", { class: "box-outer", x: -4, y: -4, width: box.w + 8, height: box.h + 8, rx: 8 }));
    }
    g.appendChild(svg("rect", { class: "box", width: box.w, height: box.h, rx: 5 }));
    g.appendChild(svg("text", { class: "box-title", x: box.w / 2, y: 17, text: box.title }));
    g.appendChild(svg("text", { class: "box-sub", x: box.w / 2, y: 32, text: box.sub }));
    const nestedNames = box.nested && Array.isArray(box.executor.workflow.executors)
      ? box.executor.workflow.executors.map((e) => String(e.id)).join(", ") : "";
    g.appendChild(svg("title", {
      text: `${id} (${box.executor.type ?? "?"})${box.nested ? `\nworkflow ${box.executor.workflow.name}: ${nestedNames}` : ""}${v === layout.start ? "\nstart" : ""}`,
    }));
    nodeLayer.appendChild(g);
    byId.set(id, g);
  });
  fragment.appendChild(nodeLayer);
  fragment.appendChild(labelLayer);

  while (svgRoot.firstChild) svgRoot.removeChild(svgRoot.firstChild);
  const width = Math.ceil(layout.width + 40);
  const height = Math.ceil(layout.height);
  svgRoot.setAttribute("width", String(width));
  svgRoot.setAttribute("height", String(height));
  svgRoot.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svgRoot.appendChild(fragment);
  return byId;
}

/** Mark the executors in `active` (ids) with data-active="true" and the class "active". */
export function markActive(byId, active) {
  const set = new Set((active ?? []).map(String));
  for (const [id, g] of byId) {
    if (set.has(id)) {
      g.setAttribute("data-active", "true");
      g.classList.add("active");
    } else {
      g.removeAttribute("data-active");
      g.classList.remove("active");
    }
  }
}
