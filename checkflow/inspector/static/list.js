// The conversation list (#/): newest first, a status filter, paging by cursors, orphans.

import { api } from "./api.js";
import { el, replace, conversationHash, shortId, statusBadge, leaseText, formatTime } from "./dom.js";

const PAGE_SIZE = 50;
const STATUSES = [
  "running", "awaiting_responses", "completed", "failed", "cancelled", "idle", "lost",
];

// kept while the page lives, so coming back from a conversation keeps the filter and page
const state = { status: "", cursors: [null] };

export class ListPage {
  constructor(ctx, root) {
    this.ctx = ctx;
    this.root = root;
    this.abort = new AbortController();
    this.storageMode = ctx.meta && ctx.meta.mode === "storage";
    this.build();
  }

  build() {
    this.filter = el("select", { testid: "status-filter", id: "status-filter" },
      el("option", { value: "", text: "all" }),
      STATUSES.map((s) => el("option", { value: s, text: s })));
    this.filter.value = state.status;
    this.filter.addEventListener("change", () => {
      state.status = this.filter.value;
      state.cursors = [null];
      this.load();
    });
    this.prev = el("button", { type: "button", testid: "prev-page", text: "← prev" });
    this.next = el("button", { type: "button", testid: "next-page", text: "next →" });
    this.prev.addEventListener("click", () => {
      if (state.cursors.length > 1) {
        state.cursors.pop();
        this.load();
      }
    });
    this.next.addEventListener("click", () => {
      if (this.nextCursor) {
        state.cursors.push(this.nextCursor);
        this.load();
      }
    });
    this.total = el("span", { class: "muted total" });
    this.pageInfo = el("span", { class: "muted" });
    const headers = ["conversation", ...(this.storageMode ? ["principal"] : []),
      "status", "head", "snapshots", "lease", "protocol", "updated"];
    this.body = el("tbody");
    this.table = el("table", { testid: "conversation-list", class: "conversation-list" },
      el("thead", null, el("tr", null, headers.map((h) => el("th", { text: h })))),
      this.body);
    this.orphans = el("div");
    replace(this.root,
      el("section", { class: "panel list-page" },
        el("div", { class: "toolbar" },
          el("h2", { text: "Conversations" }), this.total,
          el("span", { class: "spacer" }),
          el("label", { for: "status-filter", text: "status " }), this.filter,
          this.prev, this.pageInfo, this.next),
        el("div", { class: "table-wrap" }, this.table)),
      this.orphans);
  }

  async load() {
    const ctx = this.ctx;
    ctx.clearReady();
    this.prev.disabled = true;
    this.next.disabled = true;
    const cursor = state.cursors[state.cursors.length - 1];
    const signal = this.abort.signal;
    // an authenticated caller of `checkflow serve` is refused the orphans (403): not asked
    const meta = ctx.meta || {};
    const askOrphans = !(meta.mode === "serve" && meta.principal);
    const orphans = askOrphans ? api.orphans(signal).then((body) => body, () => null) : Promise.resolve(null);
    let page;
    try {
      page = await api.conversations({ limit: PAGE_SIZE, cursor, status: state.status }, signal);
    } catch (error) {
      if (error.name === "AbortError") return;
      if (cursor && error.code === "invalid_cursor") {
        state.cursors = [null];
        return this.load();
      }
      ctx.showError(error);
      replace(this.body, el("tr", null, el("td", { colspan: 9, class: "muted", text: "could not load the conversations" })));
      ctx.setReady("list");
      return;
    }
    if (signal.aborted) return;
    this.render(page);
    this.renderOrphans(await orphans);
    if (signal.aborted) return;
    ctx.setReady("list");
  }

  render(page) {
    const rows = Array.isArray(page && page.conversations) ? page.conversations : [];
    this.nextCursor = page && page.next_cursor ? String(page.next_cursor) : null;
    this.prev.disabled = state.cursors.length <= 1;
    this.next.disabled = !this.nextCursor;
    const total = Number(page && page.total);
    this.total.textContent = Number.isFinite(total) ? `${total} total` : "";
    const first = (state.cursors.length - 1) * PAGE_SIZE;
    this.pageInfo.textContent = rows.length
      ? `page ${state.cursors.length}` : "";
    const fragment = document.createDocumentFragment();
    for (const row of rows) fragment.appendChild(this.row(row));
    if (!rows.length) {
      fragment.appendChild(el("tr", null, el("td", {
        colspan: 9, class: "muted empty-row",
        text: state.status ? `no ${state.status} conversations` : "no conversations yet",
      })));
    }
    replace(this.body, fragment);
    this.body.dataset.first = String(first);
  }

  row(row) {
    const id = String(row.conversation_id);
    const principal = this.storageMode && row.principal ? String(row.principal) : null;
    const link = el("a", {
      class: "mono", hash: conversationHash(id, { principal }), text: id,
    });
    const lease = row.lease
      ? el("span", { class: row.lease.live ? "lease live" : "lease expired", text: leaseText(row.lease) })
      : el("span", { class: "muted", text: "—" });
    return el("tr", { testid: "conversation-row", "data-conversation-id": id },
      el("td", { class: "id-cell" }, link),
      this.storageMode ? el("td", { class: "mono", text: row.principal ?? "—" }) : null,
      el("td", null, statusBadge(row.status)),
      el("td", { class: "mono", text: shortId(row.head_snapshot_id) }),
      el("td", { class: "num", text: row.snapshot_count ?? "—" }),
      el("td", null, lease),
      el("td", { text: row.protocol ?? "—" }),
      el("td", { class: "time", text: formatTime(row.updated_at) }));
  }

  renderOrphans(body) {
    const list = body && Array.isArray(body.orphans) ? body.orphans : [];
    if (!list.length) {
      replace(this.orphans);
      return;
    }
    replace(this.orphans, el("section", { class: "panel", testid: "orphans" },
      el("h2", { text: `Orphan checkpoints (${list.length})` }),
      el("p", { class: "muted", text: "checkpoints no conversation references" }),
      el("ul", { class: "orphan-list" }, list.map((id) => el("li", { class: "mono", text: String(id) })))));
  }

  destroy() {
    this.abort.abort();
  }
}
