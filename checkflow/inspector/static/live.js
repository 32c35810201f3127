// Live updates of a conversation page: follow ../v1/conversations/{id}/events while a turn
// runs, log every frame, and ask the page to refetch (debounced) so the tree grows live.

import { api } from "./api.js";
import { el, preview, shortId } from "./dom.js";

const MAX_LOG = 1000;

function sleep(ms, signal) {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => { clearTimeout(timer); resolve(); }, { once: true });
  });
}

function errorText(error) {
  if (!error) return "";
  if (typeof error === "string") return error;
  if (typeof error === "object") return String(error.message ?? error.type ?? preview(error, 80));
  return String(error);
}

/** A one-line summary of an event's data. */
export function summarize(type, data) {
  if (!data || typeof data !== "object") return data === null || data === undefined ? "" : preview(data, 100);
  switch (type) {
    case "WorkflowStartedEvent":
      return `checkpoint ${shortId(data.checkpoint_id)}`;
    case "SuperstepStartedEvent":
    case "SuperstepCompletedEvent":
      return `superstep ${data.superstep}`;
    case "ExecutorInvokedEvent":
    case "ExecutorCompletedEvent":
      return `${data.executor_id} · superstep ${data.superstep}`;
    case "ExecutorFailedEvent":
      return `${data.executor_id} · ${errorText(data.error)}`;
    case "OutputEvent":
      return `${data.executor_id ? data.executor_id + ": " : ""}${preview(data.data, 100)}`;
    case "RequestInfoEvent": {
      const request = data.request && typeof data.request === "object" ? data.request : {};
      return `request ${shortId(request.request_id)} from ${request.source_executor_id ?? "?"}`;
    }
    case "RequestCancelledEvent":
      return `request ${shortId(data.request_id)} cancelled`;
    case "SnapshotCommittedEvent":
      return `snapshot ${shortId(data.snapshot_id)} · ${data.boundary} · superstep ${data.superstep}`;
    case "WorkflowStatusEvent":
      return String(data.status);
    case "WorkflowFailedEvent":
      return errorText(data.error);
    default: {
      const { type: _t, sequence: _s, timestamp: _ts, ...rest } = data;
      return preview(rest, 100);
    }
  }
}

export class Live {
  /**
   * `page` gives: id, signal, isActive() (a POST runs or the status is running),
   * scheduleRefetch(), refetch(), onError(error).
   */
  constructor(page, log) {
    this.page = page;
    this.log = log; // the `events` <ol>
    this.following = false;
    this.count = 0;
  }

  /** Start following unless already following. */
  ensure() {
    if (this.following || this.page.signal.aborted) return;
    this.following = true;
    this.loop().finally(() => { this.following = false; });
  }

  async loop() {
    const { page } = this;
    const signal = page.signal;
    let after = 0;
    let idle = 200;
    while (!signal.aborted) {
      let frames = 0;
      let failed = false;
      try {
        await api.events(page.id, after, {
          signal,
          onFrame: (frame) => {
            frames++;
            const seq = Number(frame.id);
            if (Number.isFinite(seq) && seq > 0) after = seq;
            this.append(frame);
            page.scheduleRefetch();
          },
        });
        after = 0; // the turn ended; the next one numbers its events from 1 again
      } catch (error) {
        if (signal.aborted || (error && error.name === "AbortError")) return;
        failed = true;
        if (error && (error.status === 401 || error.status === 403 || error.status === 404)) {
          page.onError(error);
          return;
        }
      }
      if (signal.aborted) return;
      if (frames || failed || !page.posting) {
        await page.refetch();
        if (!page.isActive()) return;
      }
      // while our own POST runs, ask again soon (its turn may not have begun); otherwise
      // back off (a "running" conversation whose owner went away has nothing to follow)
      idle = page.posting && !failed ? 25 : frames ? 200 : Math.min(idle * 2, failed ? 8000 : 4000);
      await sleep(idle, signal);
    }
  }

  append(frame) {
    const type = frame.event || (frame.data && frame.data.type) || "message";
    const seq = frame.id ?? (frame.data && frame.data.sequence);
    const item = el("li", { testid: "event", class: "event", "data-type": type },
      el("span", { class: "seq mono", text: seq === null || seq === undefined ? "·" : `#${seq}` }),
      el("span", { class: "etype", text: String(type).replace(/Event$/, "") }),
      el("span", { class: "esummary", text: summarize(type, frame.data) }));
    this.log.appendChild(item);
    this.count++;
    while (this.log.childElementCount > MAX_LOG) this.log.removeChild(this.log.firstChild);
    if (this.onAppend) this.onAppend(this.count);
    const box = this.log.parentElement;
    if (box) box.scrollTop = box.scrollHeight;
  }
}
