// The dashboard's shell: who the caller is (GET /whoami, asking for an API key when the server wants one), the
// hash router (#/overview, #/memory, #/audit, #/tasks) and `data-ready` on <body> once a page has drawn its data
// (with `data-ready-ms`: the time since the navigation started).
import { api, h, KEY_STORE, whenUnauthorized } from "./lib.js";
import * as overview from "./overview.js";
import * as memory from "./memory.js";
import * as audit from "./audit.js";
import * as tasks from "./tasks.js";

const PAGES = { overview, memory, audit, tasks };
const ctx = { me: null, get admin() { return this.me !== null && this.me.role === "admin"; } };
let generation = 0;

function route() {
  const [path, query = ""] = location.hash.replace(/^#\/?/, "").split("?");
  const name = PAGES[path] ? path : "overview";
  return { name, params: new URLSearchParams(query) };
}

async function render() {
  const mine = ++generation;
  const { name, params } = route();
  delete document.body.dataset.ready;
  document.body.dataset.page = name;
  for (const a of document.querySelectorAll("header nav a")) a.classList.toggle("current", a.dataset.page === name);
  const root = document.getElementById("page");
  root.replaceChildren(h("p", { class: "muted" }, "Loading…"));
  try {
    await PAGES[name].render(root, params, ctx);
  } catch (err) {
    if (mine !== generation) return;
    root.replaceChildren(h("p", { class: "error", "data-testid": "error" }, err.message));
  }
  if (mine === generation) {
    // milliseconds from the navigation's start to this page's data drawn (scripts/bench_ui.py reads it)
    document.body.dataset.readyMs = performance.now().toFixed(1);
    document.body.dataset.ready = name;
  }
}

function showWho() {
  const who = document.getElementById("who");
  const me = ctx.me;
  who.replaceChildren(...[
    h("span", { "data-testid": "whoami", "data-role": me.role }, `${me.agent} · ${me.role}`,
      me.by_key ? "" : " (no API keys: local administrator)"),
    sessionStorage.getItem(KEY_STORE)
      ? h("button", { "data-testid": "forget-key", onclick: () => { sessionStorage.removeItem(KEY_STORE); location.reload(); } },
        "Forget key")
      : null,
  ].filter(Boolean));
}

function askForKey(message) {
  const dialog = document.getElementById("key-dialog");
  document.getElementById("key-error").textContent = message || "";
  document.body.dataset.ready = "key";
  if (!dialog.open) dialog.showModal();
  return new Promise((resolve) => {
    document.getElementById("key-form").onsubmit = (ev) => {
      ev.preventDefault();
      const key = document.getElementById("key-input").value.trim();
      if (!key) return;
      sessionStorage.setItem(KEY_STORE, key);
      dialog.close();
      resolve();
    };
  });
}

async function identify() {
  for (;;) {
    try {
      ctx.me = await api("/whoami");
      return;
    } catch (err) {
      if (err.status !== 401) throw err;
      const had = sessionStorage.getItem(KEY_STORE);
      sessionStorage.removeItem(KEY_STORE);
      await askForKey(had ? `That key was refused: ${err.message}` : "");
    }
  }
}

async function start() {
  whenUnauthorized(() => {}); // identify() handles the first 401; later ones (a key revoked meanwhile) reload
  try {
    await identify();
  } catch (err) {
    document.getElementById("page").replaceChildren(h("p", { class: "error" }, err.message));
    return;
  }
  whenUnauthorized(() => { sessionStorage.removeItem(KEY_STORE); location.reload(); });
  showWho();
  window.addEventListener("hashchange", render);
  await render();
}

start();
