// The conversation page's header: id, status, heads, lease, protocol, counts, cancel button.

import { el, replace, shortId, statusBadge, leaseText } from "./dom.js";
import { cancelButton } from "./actions.js";

/** The header's elements, made once (so a button is never replaced under a click). */
function buildHeader(page) {
  const fact = (label, ...children) => el("span", { class: "fact" },
    el("span", { class: "label-muted", text: `${label} ` }), ...children);
  const h = {};
  h.id = el("h2", { class: "mono conv-id", text: page.id });
  h.status = statusBadge(null, { testid: "conversation-status" });
  h.head = el("a", { class: "mono", hash: "#/" });
  h.storageHead = el("a", { class: "mono", hash: "#/" });
  h.storageFact = fact("storage head", h.storageHead);
  h.storageFact.classList.add("storage-head");
  h.lease = el("span", { testid: "lease", class: "lease" });
  h.protocol = el("span", { testid: "protocol" });
  h.count = el("span");
  h.principal = el("span", { class: "mono" });
  h.principalFact = fact("principal", h.principal);
  h.checkpoint = el("span", { class: "mono clip" });
  h.cancel = page.writable ? cancelButton((button) => page.cancel(button)) : null;
  h.busy = el("span", { class: "busy", text: "running…" });
  replace(page.header, h.id,
    el("div", { class: "facts" }, fact("status", h.status), fact("head", h.head), h.storageFact,
      fact("lease", h.lease), fact("protocol", h.protocol), fact("snapshots", h.count),
      h.principalFact, fact("checkpoint", h.checkpoint)),
    el("div", { class: "header-actions" }, h.busy, h.cancel));
  page.h = h;
}

/** Fill the conversation header (`conversation-header`) of `page` from `conv`. */
export function renderHeader(page, conv) {
  if (!page.h) buildHeader(page);
  const h = page.h;
  const turns = Array.isArray(conv.turns) ? conv.turns : [];
  const last = turns.length ? turns[turns.length - 1] : null;
  const set = (node, text) => { if (node.textContent !== text) node.textContent = text; };
  set(h.id, String(conv.conversation_id ?? page.id));
  const badge = statusBadge(conv.status);
  set(h.status, badge.textContent);
  h.status.setAttribute("class", badge.getAttribute("class"));
  set(h.head, shortId(conv.head_snapshot_id));
  h.head.setAttribute("href", page.link(conv.head_snapshot_id ?? ""));
  const storage = conv.storage_head_snapshot_id;
  h.storageFact.hidden = !storage || storage === conv.head_snapshot_id;
  if (!h.storageFact.hidden) {
    set(h.storageHead, shortId(storage));
    h.storageHead.setAttribute("href", page.link(storage));
  }
  set(h.lease, leaseText(conv.lease));
  h.lease.setAttribute("class", conv.lease ? (conv.lease.live ? "lease live" : "lease expired") : "lease");
  set(h.protocol, String((last && last.protocol) ?? "—"));
  set(h.count, String(Array.isArray(conv.snapshots) ? conv.snapshots.length : 0));
  h.principalFact.hidden = !conv.principal;
  set(h.principal, String(conv.principal ?? ""));
  set(h.checkpoint, String(conv.checkpoint_id ?? "—"));
  h.checkpoint.setAttribute("title", String(conv.checkpoint_id ?? ""));
  if (h.cancel) h.cancel.hidden = conv.status !== "running";
  h.busy.hidden = !page.posting;
}
