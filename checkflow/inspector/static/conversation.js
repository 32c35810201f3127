// One conversation (#/c/<id>[/s/<snapshot id>][?principal=P]): header, snapshot tree,
// workflow graph, the selected snapshot (state, diff, branch), pending requests, outputs,
// turns and the live event log.

import { api } from "./api.js";
import {
  el, svg, replace, conversationHash, shortId, statusBadge, leaseText, formatTime, formatShortTime,
  preview,
} from "./dom.js";
import { drawTree, markSelected, scrollToRow } from "./tree.js";
import { drawGraph, markActive } from "./graph.js";
import { jsonTree } from "./statetree.js";
import { snapshotMeta, stateTree, fillDiffOptions, diffView } from "./snapshot.js";
import { pendingRequestBlock, branchForm } from "./actions.js";
import { renderHeader } from "./header.js";
import { Live } from "./live.js";

function panel(title, ...children) {
  const heading = el("h3", null, title);
  return { section: el("section", { class: "panel" }, heading, ...children), heading };
}

export class ConversationPage {
  constructor(ctx, root, route, prefetched = null) {
    this.prefetched = prefetched;
    this.ctx = ctx;
    this.root = root;
    this.id = route.id;
    this.principal = route.principal ?? null;
    this.abortController = new AbortController();
    this.signal = this.abortController.signal;
    this.writable = Boolean(ctx.meta && ctx.meta.writable);
    this.conv = null;
    this.details = new Map();
    this.selected = null;
    this.explicit = false;
    this.posting = false;
    this.treeKey = "";
    this.pendingKey = null;
    this.outputsKey = "";
    this.selectToken = 0;
    this.shown = null; // snapshot id whose detail panels are drawn
    this.build();
    this.live = new Live(this, this.events);
    this.live.onAppend = (n) => { this.eventsHeading.textContent = `Events (${n})`; };
  }

  matches(route) {
    return route.id === this.id && (route.principal ?? null) === this.principal;
  }

  link(snapshotId) {
    return conversationHash(this.id, { snapshot: snapshotId, principal: this.principal });
  }

  build() {
    this.header = el("section", { testid: "conversation-header", class: "panel conv-header" });
    this.header.appendChild(el("h2", { class: "mono", text: this.id }));
    this.treeSvg = svg("svg", { testid: "snapshot-tree", class: "snapshot-tree", role: "tree" });
    this.treePanel = el("div", { class: "tree-panel" }, this.treeSvg);
    this.treeSvg.addEventListener("click", (event) => this.treeClick(event));
    this.treeSvg.addEventListener("keydown", (event) => {
      if (event.key === "Enter" || event.key === " ") {
        event.preventDefault();
        this.treeClick(event);
      } else if ((event.key === "ArrowUp" || event.key === "ArrowDown") && this.tree && this.snapshots) {
        // move the selection one row up or down
        event.preventDefault();
        const row = this.tree.rowOf(this.selected) + (event.key === "ArrowUp" ? -1 : 1);
        const next = this.snapshots[row];
        if (!next) return;
        const node = this.tree.byId.get(next.snapshot_id);
        if (node) node.focus({ preventScroll: true });
        this.ctx.navigate(this.link(next.snapshot_id));
      }
    });
    const tree = panel("Snapshots",
      el("div", { class: "legend" },
        el("span", { class: "legend-head", text: "● head" }),
        el("span", { class: "legend-storage", text: "■ storage head" }),
        el("span", { class: "legend-tip", text: "○ tip" })),
      this.treePanel);
    this.treeHeading = tree.heading;

    const workflow = this.ctx.meta && this.ctx.meta.workflow;
    let graphBody;
    if (workflow && typeof workflow === "object") {
      this.graphSvg = svg("svg", { testid: "workflow-graph", class: "workflow-graph" });
      graphBody = el("div", { class: "graph-panel" }, this.graphSvg);
    } else {
      graphBody = el("p", { class: "note", testid: "workflow-note",
        text: "The workflow graph needs the workflow's code: serve it with checkflow serve --inspector." });
    }
    const graph = panel(workflow ? `Workflow ${workflow.name ?? ""}` : "Workflow", graphBody);

    this.outputs = el("ul", { testid: "outputs", class: "outputs" });
    this.outputsEmpty = el("p", { class: "muted", text: "no outputs yet" });
    const outputs = panel("Outputs", this.outputsEmpty, this.outputs);
    this.outputsHeading = outputs.heading;

    this.turnsBody = el("tbody");
    this.turns = el("table", { testid: "turns", class: "turns" },
      el("thead", null, el("tr", null,
        ["turn", "protocol", "state", "status", "started", "ended", "snapshots"].map((h) => el("th", { text: h })))),
      this.turnsBody);
    const turns = panel("Turns", el("div", { class: "table-wrap" }, this.turns));

    this.events = el("ol", { testid: "events", class: "events" });
    const events = panel("Events", el("p", { class: "muted", text: "live events of the running turn appear here" }),
      el("div", { class: "events-box" }, this.events));
    this.eventsHeading = events.heading;

    this.pendingList = el("div", { class: "pending-list" });
    const pending = panel("Pending requests at the head", this.pendingList);
    this.pendingSection = pending.section;
    this.pendingSection.hidden = true;

    this.snapshotMeta = el("div");
    const snapshot = panel("Selected snapshot", this.snapshotMeta);
    this.snapshotHeading = snapshot.heading;
    this.stateView = el("div", { testid: "state-view", class: "state-view" });
    const state = panel("State", this.stateView);
    this.diffAgainst = el("select", { testid: "diff-against", id: "diff-against" },
      el("option", { value: "parent", text: "parent" }));
    this.diffAgainst.addEventListener("change", async () => {
      const token = this.selectToken;
      this.ctx.clearReady();
      await this.renderDiff();
      if (token === this.selectToken && !this.signal.aborted) this.ctx.setReady("conversation");
    });
    this.diffView = el("div", { testid: "diff-view", class: "diff-view" });
    const diff = panel("Diff",
      el("div", { class: "toolbar" }, el("label", { for: "diff-against", text: "against " }), this.diffAgainst),
      this.diffView);

    const right = [];
    if (!this.writable) {
      right.push(el("p", { testid: "read-only-note", class: "note read-only",
        text: "read-only: checkflow inspect serves no writes" }));
    }
    right.push(pending.section, snapshot.section, state.section, diff.section);
    if (this.writable) {
      this.branchBox = el("div");
      right.push(panel("Branch from here", el("p", { class: "muted",
        text: "start a new turn from the selected snapshot (its state is kept; the head moves to the new branch)" }),
      this.branchBox).section);
    }
    replace(this.root,
      el("p", { class: "crumbs" }, el("a", { hash: "#/", text: "← conversations" })),
      this.header,
      el("div", { class: "columns" },
        el("div", { class: "col-left" }, tree.section, graph.section, outputs.section, turns.section, events.section),
        el("div", { class: "col-right" }, ...right)));
    if (this.graphSvg) this.graphNodes = drawGraph(this.graphSvg, workflow);
  }

  treeClick(event) {
    const target = event.target instanceof Element ? event.target.closest('[data-testid="snapshot-node"]') : null;
    if (!target) return;
    const sid = target.getAttribute("data-snapshot-id");
    if (sid !== null) this.ctx.navigate(this.link(sid));
  }

  isActive() {
    return this.posting || (this.conv !== null && this.conv.status === "running");
  }

  onError(error) {
    this.ctx.showError(error);
  }

  /** First load: the conversation, the tree, then the selected snapshot. */
  async load(route) {
    this.ctx.clearReady();
    try {
      await this.fetchConversation();
    } catch (error) {
      if (this.signal.aborted) return;
      this.ctx.showError(error);
      replace(this.header, el("h2", { class: "mono", text: this.id }),
        el("p", { class: "muted", text: `could not load this conversation: ${error.message}` }));
      this.ctx.setReady("conversation");
      return;
    }
    await this.route(route);
  }

  /** The hash changed within this conversation: select its snapshot (or the head). */
  async route(route, { force = false } = {}) {
    if (!this.conv) return;
    let sid = route.snapshot;
    this.explicit = Boolean(sid);
    if (sid && !this.snapshotIds.has(sid)) {
      this.ctx.showError(`this conversation has no snapshot ${sid}; showing the head`);
      sid = null;
      this.explicit = false;
    }
    await this.select(sid || this.conv.head_snapshot_id || this.conv.storage_head_snapshot_id, { force });
  }

  async fetchConversation() {
    const early = this.prefetched;
    this.prefetched = null;
    const conv = await (early ?? api.conversation(this.id, this.principal, this.signal));
    if (this.signal.aborted) return;
    this.render(conv);
  }

  scheduleRefetch() {
    clearTimeout(this.refetchTimer);
    this.refetchTimer = setTimeout(() => { this.refetch(); }, 150);
  }

  /** Refetch the conversation (one at a time; a call during a fetch fetches again after). */
  refetch() {
    if (this.fetching) {
      this.again = true;
      return this.fetching;
    }
    this.fetching = (async () => {
      do {
        this.again = false;
        try {
          await this.fetchConversation();
        } catch (error) {
          if (this.signal.aborted) return;
          this.ctx.showError(error);
          return;
        }
        const head = this.conv && (this.conv.head_snapshot_id || this.conv.storage_head_snapshot_id);
        if (!this.explicit && head && this.selected !== head && !this.signal.aborted) {
          await this.select(head, { background: true });
        }
      } while (this.again && !this.signal.aborted);
    })().finally(() => { this.fetching = null; });
    return this.fetching;
  }

  render(conv) {
    this.conv = conv;
    const snapshots = Array.isArray(conv.snapshots) ? conv.snapshots : [];
    this.snapshots = snapshots;
    this.snapshotById = new Map(snapshots.map((s) => [s.snapshot_id, s]));
    this.snapshotIds = this.snapshotById;
    this.renderHeader(conv);
    this.renderTree(conv, snapshots);
    this.renderPending(conv);
    this.renderOutputs(conv);
    this.renderTurns(conv);
    if (this.diffOptionsCount !== snapshots.length) {
      fillDiffOptions(this.diffAgainst, snapshots);
      this.diffOptionsCount = snapshots.length;
    }
    if (conv.status === "running") this.live.ensure();
  }

  renderHeader(conv) {
    renderHeader(this, conv);
  }

  renderTree(conv, snapshots) {
    const tips = new Set(Array.isArray(conv.tips) ? conv.tips : []);
    const last = snapshots.length ? snapshots[snapshots.length - 1].snapshot_id : "";
    const key = `${snapshots.length}|${last}|${conv.head_snapshot_id}|${conv.storage_head_snapshot_id}|${tips.size}`;
    this.treeHeading.textContent = `Snapshots (${snapshots.length})`;
    if (key === this.treeKey) return;
    this.treeKey = key;
    // (the panel keeps its scroll offset: nothing is laid out between removal and redraw)
    this.tree = drawTree(this.treeSvg, snapshots, {
      head: conv.head_snapshot_id, storageHead: conv.storage_head_snapshot_id, tips, selected: this.selected,
    });
  }

  renderPending(conv) {
    const pending = Array.isArray(conv.pending_requests) ? conv.pending_requests : [];
    const key = `${this.writable}|${pending.map((r) => r.request_id).join("\u0000")}`;
    if (key === this.pendingKey) return;
    this.pendingKey = key;
    this.pendingSection.hidden = pending.length === 0;
    replace(this.pendingList, pending.map((request) => pendingRequestBlock(request, {
      writable: this.writable,
      onAnswer: (responses, button) => this.submitRun({ responses, resume_token: this.conv.resume_token }, button),
    })));
  }

  renderOutputs(conv) {
    const outputs = Array.isArray(conv.outputs) ? conv.outputs : [];
    let key;
    try {
      key = JSON.stringify(outputs);
    } catch {
      key = String(outputs.length);
    }
    if (key === this.outputsKey) return;
    this.outputsKey = key;
    this.outputsEmpty.hidden = outputs.length > 0;
    this.outputsHeading.textContent = `Outputs (${outputs.length})`;
    replace(this.outputs, outputs.map((output) => el("li", { class: "output" },
      output !== null && typeof output === "object" ? jsonTree(output, { openDepth: 1 })
        : el("span", { class: "json", text: typeof output === "string" ? output : preview(output, 2000) }))));
  }

  renderTurns(conv) {
    const turns = Array.isArray(conv.turns) ? conv.turns : [];
    let key;
    try {
      key = JSON.stringify(turns);
    } catch {
      key = String(Math.random());
    }
    if (key === this.turnsKey) return;
    this.turnsKey = key;
    const rows = turns.map((turn) => {
      const range = el("td", { class: "mono" });
      if (turn.first_snapshot_id && this.snapshotIds.has(turn.first_snapshot_id)) {
        range.appendChild(el("a", { hash: this.link(turn.first_snapshot_id), text: shortId(turn.first_snapshot_id) }));
      }
      if (turn.last_snapshot_id && this.snapshotIds.has(turn.last_snapshot_id)) {
        range.append(" → ", el("a", { hash: this.link(turn.last_snapshot_id), text: shortId(turn.last_snapshot_id) }));
      }
      const started = formatShortTime(turn.started_at);
      let ended = formatShortTime(turn.ended_at);
      if (ended.length > 11 && ended.slice(0, 10) === started.slice(0, 10)) ended = ended.slice(11);
      const row = el("tr", { class: "turn", "data-turn-id": String(turn.turn_id ?? "") },
        el("td", { class: "mono", text: shortId(turn.turn_id) }),
        el("td", { text: turn.protocol ?? "—" }),
        el("td", { text: turn.state ?? "—" }),
        el("td", null, statusBadge(turn.status)),
        el("td", { class: "time", text: started }),
        el("td", { class: "time", text: ended }),
        range);
      if (turn.error) {
        const text = typeof turn.error === "object" ? (turn.error.message ?? preview(turn.error, 300)) : String(turn.error);
        return [row, el("tr", { class: "turn-error" }, el("td", { colspan: 7, class: "error-text", text: `error: ${text}` }))];
      }
      return row;
    });
    if (!rows.length) rows.push(el("tr", null, el("td", { colspan: 7, class: "muted", text: "no turns" })));
    replace(this.turnsBody, rows);
  }

  detail(sid) {
    let promise = this.details.get(sid);
    if (!promise) {
      promise = api.snapshot(this.id, sid, this.principal, this.signal);
      promise.catch(() => this.details.delete(sid));
      this.details.set(sid, promise);
    }
    return promise;
  }

  /** Select `sid`: mark it in the tree, load its detail, draw the right column. */
  async select(sid, { force = false, background = false } = {}) {
    if (!sid) {
      replace(this.snapshotMeta, el("p", { class: "muted", text: "this conversation has no snapshots" }));
      this.ctx.setReady("conversation");
      return;
    }
    const previous = this.selected;
    this.selected = sid;
    if (this.tree) {
      markSelected(this.tree, previous, sid);
      if (previous !== sid || !background) {
        // in the next frame: reading the panel's size now would lay the page out twice
        const row = this.tree.rowOf(sid);
        requestAnimationFrame(() => scrollToRow(this.treePanel, row));
      }
    }
    if (this.shown === sid && !force) {
      if (!background) this.ctx.setReady("conversation");
      return;
    }
    const token = ++this.selectToken;
    if (!background) this.ctx.clearReady();
    this.snapshotHeading.textContent = `Selected snapshot ${shortId(sid)}`;
    const entry = this.snapshotById.get(sid);
    if (entry && entry.parent_snapshot_id && (this.diffAgainst.value || "parent") === "parent") {
      this.detail(entry.parent_snapshot_id).catch(() => {}); // the diff's, fetched meanwhile
    }
    let detail;
    try {
      detail = await this.detail(sid);
    } catch (error) {
      if (this.signal.aborted || token !== this.selectToken) return;
      this.ctx.showError(error);
      replace(this.snapshotMeta, el("p", { class: "muted", text: `could not load snapshot ${sid}: ${error.message}` }));
      if (!background) this.ctx.setReady("conversation");
      return;
    }
    if (this.signal.aborted || token !== this.selectToken) return;
    this.shown = sid;
    this.current = detail;
    replace(this.snapshotMeta, snapshotMeta(detail, this.conv, (id) => this.link(id)));
    replace(this.stateView, stateTree(detail.state));
    if (this.graphNodes) markActive(this.graphNodes, detail.executors);
    if (this.branchBox) {
      replace(this.branchBox, branchForm(sid, detail.pending_requests, {
        onBranch: (body, button) => this.submitRun(body, button),
      }));
    }
    await this.renderDiff(token);
    if (this.signal.aborted || token !== this.selectToken) return;
    if (!background) this.ctx.setReady("conversation");
  }

  async renderDiff(token = this.selectToken) {
    const detail = this.current;
    if (!detail) return;
    const choice = this.diffAgainst.value || "parent";
    const againstId = choice === "parent" ? detail.parent_snapshot_id : choice;
    let against = null;
    if (againstId) {
      replace(this.diffView, el("p", { class: "muted", text: "loading…" }));
      try {
        against = await this.detail(againstId);
      } catch (error) {
        if (this.signal.aborted || token !== this.selectToken) return;
        replace(this.diffView, el("p", { class: "error-text", text: `could not load ${againstId}: ${error.message}` }));
        return;
      }
    }
    if (this.signal.aborted || token !== this.selectToken || this.current !== detail) return;
    if ((this.diffAgainst.value || "parent") !== choice) return; // chosen again meanwhile
    replace(this.diffView, diffView(detail, against, choice === "parent" ? "parent" : "snapshot"));
  }

  /** POST a run (an answer, a branch); follow its events; then select the new head. */
  async submitRun(body, button) {
    if (this.posting) return;
    this.posting = true;
    if (button) button.disabled = true;
    this.ctx.clearError();
    this.ctx.clearReady();
    if (this.conv) this.renderHeader(this.conv);
    let ok = false;
    try {
      await api.runStreamed(this.id, body, {
        signal: this.signal,
        onFrame: (frame) => { this.live.append(frame); this.scheduleRefetch(); },
      });
      ok = true;
    } catch (error) {
      if (this.signal.aborted) return;
      this.ctx.showError(error);
    } finally {
      this.posting = false;
      if (button && button.isConnected) button.disabled = false;
    }
    if (!ok) {
      if (this.conv) this.renderHeader(this.conv);
      this.ctx.setReady("conversation");
      return;
    }
    await this.refetch();
    if (this.signal.aborted || !this.conv) return;
    const head = this.conv.head_snapshot_id;
    this.explicit = true;
    this.shown = null; // redraw the forms even when the head did not move
    this.ctx.navigate(this.link(head));
  }

  async cancel(button) {
    button.disabled = true;
    this.ctx.clearError();
    try {
      const result = await api.cancel(this.id, this.signal);
      if (result && result.cancelled === false) this.ctx.showError("nothing to cancel: no turn was running");
    } catch (error) {
      if (this.signal.aborted) return;
      this.ctx.showError(error);
    }
    if (button.isConnected) button.disabled = false;
    await this.refetch();
  }

  destroy() {
    clearTimeout(this.refetchTimer);
    this.abortController.abort();
  }
}
