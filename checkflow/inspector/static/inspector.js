// The inspector's entry module: the header, the token box, the error banner and the
// hash router (#/ the list, #/c/<id>[/s/<snapshot id>][?principal=P] one conversation).

import { api, onUnauthorized, getToken, setToken } from "./api.js";
import { el, replace } from "./dom.js";
import { ListPage } from "./list.js";
import { ConversationPage } from "./conversation.js";

const $ = (id) => document.getElementById(id);

let meta = null;
let current = null;

function setReady(name) {
  document.body.dataset.ready = name;
}

function clearReady() {
  delete document.body.dataset.ready;
}

function showError(error) {
  const message = typeof error === "string" ? error : (error && error.message) || String(error);
  $("error-banner").textContent = message;
  $("error-wrap").hidden = false;
  if (error && error.status === 401) showTokenBox("this server needs a bearer token");
}

function clearError() {
  $("error-banner").textContent = "";
  $("error-wrap").hidden = true;
}

function showTokenBox(note) {
  const box = $("token-box");
  box.hidden = false;
  $("token-button").setAttribute("aria-expanded", "true");
  if (note) $("token-note").textContent = note;
  $("token-input").focus();
}

function hideTokenBox() {
  $("token-box").hidden = true;
  $("token-button").setAttribute("aria-expanded", "false");
}

/** Parse the hash; ids are percent-decoded here (and only encoded by conversationHash). */
export function parseRoute(hash) {
  let path = (hash || "").replace(/^#/, "");
  let query = "";
  const q = path.indexOf("?");
  if (q >= 0) {
    query = path.slice(q + 1);
    path = path.slice(0, q);
  }
  const params = new URLSearchParams(query);
  const parts = path.split("/");
  if (parts[1] === "c" && parts[2]) {
    try {
      return {
        name: "conversation",
        id: decodeURIComponent(parts[2]),
        snapshot: parts[3] === "s" && parts[4] ? decodeURIComponent(parts.slice(4).join("/")) : null,
        principal: params.get("principal") || null,
      };
    } catch {
      return { name: "bad", hash };
    }
  }
  return { name: "list" };
}

function navigate(hash) {
  if (location.hash === hash) route();
  else location.hash = hash;
}

const ctx = {
  get meta() { return meta; },
  setReady,
  clearReady,
  showError,
  clearError,
  navigate,
};

function route() {
  if (!meta) return;
  const target = parseRoute(location.hash);
  if (target.name === "conversation" && current instanceof ConversationPage && current.matches(target)) {
    current.route(target);
    return;
  }
  if (current) current.destroy();
  current = null;
  clearReady();
  clearError();
  const app = $("app");
  window.scrollTo(0, 0);
  if (target.name === "conversation") {
    current = new ConversationPage(ctx, app, target, prefetched(target));
    document.title = `${target.id} · checkflow inspector`;
    current.load(target);
  } else {
    if (target.name === "bad") showError("this address does not name a conversation");
    current = new ListPage(ctx, app);
    document.title = "checkflow inspector";
    current.load();
  }
}

function renderHeader() {
  const workflow = meta.workflow && typeof meta.workflow === "object" ? meta.workflow : null;
  const name = $("workflow-name");
  name.hidden = !workflow;
  replace(name, workflow ? [el("span", { class: "label-muted", text: "workflow " }),
    el("span", { class: "mono", text: String(workflow.name ?? "") })] : []);
  const mode = $("mode");
  mode.hidden = !meta.mode;
  replace(mode, el("span", { class: "label-muted", text: "mode " }), String(meta.mode ?? ""),
    meta.storage ? el("span", { class: "mono storage", text: ` ${meta.storage}` }) : null,
    meta.writable ? null : el("span", { class: "tag tag-ro", text: "read-only" }));
  const principal = $("principal");
  principal.hidden = !meta.principal;
  replace(principal, meta.principal ? [el("span", { class: "label-muted", text: "principal " }),
    el("span", { class: "mono", text: String(meta.principal) })] : []);
  $("docs-link").hidden = meta.mode !== "serve";
}

let early = null; // the first page's conversation, fetched alongside api/meta

/** The conversation `route` names, from the fetch started at boot when it matches. */
function prefetched(target) {
  const found = early;
  early = null;
  return found && found.id === target.id && found.principal === target.principal ? found.promise : null;
}

async function boot() {
  clearReady();
  const first = parseRoute(location.hash);
  if (first.name === "conversation") {
    const promise = api.conversation(first.id, first.principal);
    promise.catch(() => {}); // handled by the page that takes it
    early = { id: first.id, principal: first.principal, promise };
  }
  let loaded;
  try {
    loaded = await api.meta();
  } catch (error) {
    showError(error);
    replace($("app"), el("p", { class: "muted",
      text: error.status === 401 ? "enter a token to see this server's conversations" : "could not load api/meta" }));
    return;
  }
  meta = loaded && typeof loaded === "object" ? loaded : { writable: false, mode: null, workflow: null };
  renderHeader();
  route();
}

function wire() {
  $("token-input").value = getToken();
  $("token-button").addEventListener("click", () => {
    if ($("token-box").hidden) showTokenBox();
    else hideTokenBox();
  });
  $("token-box").addEventListener("submit", (event) => {
    event.preventDefault();
    setToken($("token-input").value.trim());
    hideTokenBox();
    clearError();
    if (current) current.destroy();
    current = null;
    meta = null;
    boot();
  });
  $("token-clear").addEventListener("click", () => {
    setToken("");
    $("token-input").value = "";
    $("token-note").textContent = "token forgotten";
  });
  $("error-close").addEventListener("click", clearError);
  onUnauthorized(() => showTokenBox("this server needs a bearer token"));
  window.addEventListener("hashchange", route);
  window.addEventListener("pagehide", () => { if (current) current.destroy(); });
  window.addEventListener("pageshow", (event) => {
    if (!event.persisted) return;
    current = null;
    route();
  });
}

wire();
boot();
