// The selected snapshot's panels: its metadata, its four buckets as a tree, and a diff
// against its parent or any other snapshot.

import { el, replace, shortId, formatTime } from "./dom.js";
import { jsonTree } from "./statetree.js";
import { jsonDiff, renderDiff } from "./diff.js";

const BUCKETS = ["workflow_state", "executor_states", "edge_states", "messages"];

function describe(meta) {
  if (!meta || typeof meta !== "object") return "";
  const step = meta.superstep ?? "?";
  if (meta.boundary === "input_accepted") return `input · step ${step}`;
  return `step ${step}`;
}

/** The metadata block (`snapshot-meta`). `link(id)` gives the hash selecting a snapshot. */
export function snapshotMeta(detail, conv, link) {
  const meta = detail.metadata && typeof detail.metadata === "object" ? detail.metadata : {};
  const turn = meta.turn && typeof meta.turn === "object" ? meta.turn : null;
  const tips = new Set(conv.tips ?? []);
  const flags = [];
  if (detail.snapshot_id === conv.head_snapshot_id) flags.push(el("span", { class: "tag tag-head", text: "head" }));
  if (detail.snapshot_id === conv.storage_head_snapshot_id && conv.storage_head_snapshot_id !== conv.head_snapshot_id) {
    flags.push(el("span", { class: "tag tag-storage", text: "storage head" }));
  }
  if (tips.has(detail.snapshot_id)) flags.push(el("span", { class: "tag tag-tip", text: "tip" }));
  const parent = detail.parent_snapshot_id
    ? el("a", { class: "mono", hash: link(String(detail.parent_snapshot_id)), text: String(detail.parent_snapshot_id) })
    : el("span", { class: "muted", text: "none (root)" });
  const executors = Array.isArray(detail.executors) && detail.executors.length
    ? detail.executors.map((id) => el("span", { class: "chip mono", text: String(id) }))
    : [el("span", { class: "muted", text: "none" })];
  const rows = [
    ["snapshot", el("span", { class: "mono", text: String(detail.snapshot_id) }), ...flags],
    ["parent", parent],
    ["time", formatTime(detail.timestamp)],
    ["boundary", String(meta.boundary ?? "—")],
    ["superstep", String(meta.superstep ?? "—")],
    ["status", String(meta.status ?? "—")],
    ["turn", turn ? el("span", null, el("span", { class: "mono", text: String(turn.id ?? "—") }),
      ` · ${turn.protocol ?? "?"}`) : "—"],
    ["executors", ...executors],
  ];
  const extra = Object.keys(meta).filter((k) => !["boundary", "superstep", "status", "turn"].includes(k));
  const dl = el("dl", { class: "meta-list", testid: "snapshot-meta" });
  for (const [name, ...values] of rows) {
    dl.append(el("dt", { text: name }), el("dd", null, ...values.flatMap((v, i) => (i ? [" ", v] : [v]))));
  }
  if (extra.length) {
    const rest = {};
    for (const k of extra) rest[k] = meta[k];
    dl.append(el("dt", { text: "metadata" }), el("dd", null, jsonTree(rest, { openDepth: 0, rootKeys: true })));
  }
  return dl;
}

/** The four buckets as a tree, for `state-view`. */
export function stateTree(state) {
  const value = state && typeof state === "object" ? state : {};
  const ordered = {};
  for (const bucket of BUCKETS) if (bucket in value) ordered[bucket] = value[bucket];
  for (const key of Object.keys(value)) if (!(key in ordered)) ordered[key] = value[key];
  return jsonTree(ordered, { testids: true, openDepth: 2, rootKeys: true });
}

/** Fill the `diff-against` select: "parent" and every snapshot (keeping the choice). */
export function fillDiffOptions(select, snapshots) {
  const current = select.value || "parent";
  const fragment = document.createDocumentFragment();
  fragment.appendChild(el("option", { value: "parent", text: "parent" }));
  for (let i = snapshots.length - 1; i >= 0; i--) {
    const s = snapshots[i];
    fragment.appendChild(el("option", {
      value: String(s.snapshot_id), text: `${shortId(s.snapshot_id)} · ${describe(s.metadata)}`,
    }));
  }
  replace(select, fragment);
  select.value = current;
  if (select.value !== current) select.value = "parent";
}

/** The diff of `against` -> `detail` (a missing parent compares with empty buckets). */
export function diffView(detail, against, againstLabel) {
  const empty = {};
  for (const bucket of BUCKETS) empty[bucket] = {};
  const before = against ? against.state : empty;
  const result = jsonDiff(before ?? {}, detail.state ?? {});
  const counts = { added: 0, removed: 0, changed: 0 };
  for (const entry of result.entries) counts[entry.change]++;
  return el("div", null,
    el("p", { class: "muted diff-summary", text: against
      ? `from ${againstLabel} ${shortId(against.snapshot_id)}: ${counts.changed} changed, ${counts.added} added, ${counts.removed} removed`
      : `a root snapshot, compared with empty buckets: ${counts.added} added` }),
    renderDiff(result));
}
