// Write controls of a conversation page: answer forms for pending requests, the
// "branch from here" form, and the cancel button. They only build DOM and read values; the
// page sends the requests (page.submitRun / page.cancel).

import { schemaForm } from "./form.js";
import { el, replace, shortId } from "./dom.js";
import { jsonTree } from "./statetree.js";

let formCounter = 0;

/**
 * Call `fn` when `form` is submitted: by its own submit button, or by Enter in a form.js
 * form inside it (those are <form>s too: their submit events bubble here and are ignored,
 * and their "cf-submit" event is taken instead). Nothing is ever submitted natively.
 */
function onSubmit(form, fn) {
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (event.target === form) fn();
  });
  form.addEventListener("cf-submit", (event) => {
    event.stopPropagation();
    const button = form.querySelector('button[type="submit"]');
    if (!button || !button.disabled) fn();
  });
}

function errorList(errors) {
  return errors.map((message) => el("li", { text: String(message) }));
}

function requestHead(request) {
  return el("div", { class: "request-head" },
    el("span", { class: "label-muted", text: "request " }),
    el("span", { class: "mono", text: String(request.request_id) }),
    el("span", { class: "label-muted", text: " from " }),
    el("span", { class: "mono", text: String(request.source_executor_id ?? "?") }),
    el("span", { class: "label-muted", text: " · answer type " }),
    el("span", { class: "mono type", text: String(request.response_type ?? "?") }));
}

/** One `pending-request` block; with an `answer-form` when `writable`. */
export function pendingRequestBlock(request, { writable, onAnswer }) {
  const block = el("div", {
    testid: "pending-request", class: "pending-request", "data-request-id": String(request.request_id),
  });
  block.appendChild(requestHead(request));
  block.appendChild(el("div", { class: "request-data" }, jsonTree(request.data, { openDepth: 2 })));
  if (!writable) return block;
  const f = schemaForm(request.response_schema ?? null, { idPrefix: `req-${++formCounter}` });
  const errors = el("ul", { class: "form-errors", testid: "answer-errors", hidden: true });
  const submit = el("button", { type: "submit", testid: "answer-submit", class: "primary", text: "answer" });
  const form = el("form", { testid: "answer-form", class: "answer-form", novalidate: true },
    f.element, errors, el("div", { class: "form-actions" }, submit));
  const answer = () => {
    const result = f.read();
    if (!result.ok) {
      replace(errors, errorList(result.errors ?? ["invalid answer"]));
      errors.hidden = false;
      return;
    }
    errors.hidden = true;
    replace(errors);
    onAnswer({ [request.request_id]: result.value }, submit);
  };
  onSubmit(form, answer);
  block.appendChild(form);
  return block;
}

/**
 * The `branch-form` for a snapshot: answer forms for its pending requests, or a message
 * textarea with a "send as JSON" checkbox. `onBranch(body, button)` gets
 * {"message"|"responses", "from_snapshot"}.
 */
export function branchForm(snapshotId, pending, { onBranch }) {
  const submit = el("button", { type: "submit", testid: "branch-submit", class: "primary" });
  const errors = el("ul", { class: "form-errors", testid: "branch-error", hidden: true });
  const form = el("form", { testid: "branch-form", class: "branch-form", novalidate: true });
  const showErrors = (list) => {
    replace(errors, errorList(list));
    errors.hidden = !list.length;
  };
  let collect;
  if (Array.isArray(pending) && pending.length) {
    submit.textContent = "answer from this snapshot";
    const parts = pending.map((request) => {
      const n = ++formCounter;
      const f = schemaForm(request.response_schema ?? null, { idPrefix: `branch-${n}` });
      const include = el("input", { type: "checkbox", id: `branch-${n}-include`, class: "include" });
      include.checked = true;
      const fieldset = el("fieldset", { class: "branch-answer", "data-request-id": String(request.request_id) },
        el("legend", null, include,
          el("label", { for: `branch-${n}-include`, text: " answer " }),
          el("span", { class: "mono", text: String(request.request_id) })),
        requestHead(request),
        el("div", { class: "request-data" }, jsonTree(request.data, { openDepth: 1 })),
        f.element);
      return { request, f, include, fieldset };
    });
    form.append(...parts.map((p) => p.fieldset));
    collect = () => {
      const responses = {};
      const problems = [];
      for (const part of parts) {
        if (!part.include.checked) continue;
        const result = part.f.read();
        if (result.ok) responses[part.request.request_id] = result.value;
        else {
          for (const message of result.errors ?? ["invalid answer"]) {
            problems.push(`${shortId(part.request.request_id)}: ${message}`);
          }
        }
      }
      if (!problems.length && !Object.keys(responses).length) problems.push("choose at least one request to answer");
      return problems.length ? { ok: false, errors: problems } : { ok: true, body: { responses } };
    };
  } else {
    submit.textContent = "send from this snapshot";
    const id = `branch-message-${++formCounter}`;
    const textarea = el("textarea", {
      testid: "branch-message", id, class: "mono", rows: 3, placeholder: "a message for the workflow",
    });
    const asJson = el("input", { type: "checkbox", id: `${id}-json`, testid: "branch-json" });
    form.append(
      el("label", { for: id, class: "block-label", text: "message" }),
      textarea,
      el("div", { class: "inline" }, asJson, el("label", { for: `${id}-json`, text: " send as JSON" })));
    collect = () => {
      const text = textarea.value;
      if (!asJson.checked) return { ok: true, body: { message: text } };
      try {
        return { ok: true, body: { message: JSON.parse(text) } };
      } catch (exc) {
        return { ok: false, errors: [`not JSON: ${exc && exc.message ? exc.message : exc}`] };
      }
    };
  }
  form.append(errors, el("div", { class: "form-actions" }, submit));
  onSubmit(form, () => {
    const result = collect();
    if (!result.ok) {
      showErrors(result.errors);
      return;
    }
    showErrors([]);
    onBranch({ ...result.body, from_snapshot: snapshotId }, submit);
  });
  return form;
}

/** The `cancel-run` button. */
export function cancelButton(onCancel) {
  const button = el("button", { type: "button", testid: "cancel-run", class: "danger", text: "cancel run" });
  button.addEventListener("click", () => onCancel(button));
  return button;
}
