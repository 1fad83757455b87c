// Audit: the log a page at a time (GET /events?after=&limit=), each event with its hash and its link to the one
// before; the latest signed checkpoint (GET /checkpoints/latest); "Verify now" (GET /audit/verify); and the stamp
// receipt checker (POST /stamps/verify).
import { api, fill, errorBox, fmt, h } from "./lib.js";

const PAGE = 50;

function go(params) {
  const next = new URLSearchParams(params);
  for (const [k, v] of [...next]) if (!v || v === "0") next.delete(k);
  location.hash = `#/audit?${next}`;
}

function linkCell(ev, before) {
  // The chain link is checkable on the page when the event before it (position - 1) is on the page too.
  if (ev.position === 1) return h("span", { class: "muted" }, "genesis");
  if (!before || before.position !== ev.position - 1) return h("span", { class: "muted", title: ev.prev_hash }, `← ${fmt.short(ev.prev_hash, 10)}`);
  const ok = before.hash === ev.prev_hash;
  return h("span", { class: ok ? "ok" : "bad", "data-link": ok ? "ok" : "broken", title: ev.prev_hash },
    `${ok ? "✓" : "✗"} ← ${fmt.short(ev.prev_hash, 10)}`);
}

function copyButton(hash) {
  // The full hash, to paste elsewhere (the cell shows its first 16 characters; its title, all 64). Without the
  // clipboard API (a page served over plain http to another host) the browser's prompt holds it, selected.
  return h("button", { class: "copy", type: "button", title: "copy the full hash", "data-testid": "copy-hash", "data-copy": hash,
    onclick: async (ev) => {
      try { await navigator.clipboard.writeText(hash); ev.target.textContent = "copied"; } catch { prompt("The event's hash:", hash); }
    } }, "copy");
}

export async function render(root, params, ctx) {
  const after = Number(params.get("after") || 0);
  const type = params.get("type") || "";
  const stream = params.get("stream") || "";
  const back = (params.get("back") || "").split(",").filter(Boolean);
  const [page, checkpoint] = await Promise.all([
    api("/events", { params: { after, limit: PAGE, type, stream } }),
    api("/checkpoints/latest").catch((err) => err),
  ]);

  const typeInput = h("input", { value: type, placeholder: "e.g. ComplianceStamped", "data-testid": "filter-type" });
  const streamInput = h("input", { value: stream, placeholder: "e.g. session:…", "data-testid": "filter-stream" });
  const filters = h("form", { class: "controls", onsubmit: (e) => { e.preventDefault(); go({ type: typeInput.value.trim(), stream: streamInput.value.trim() }); } },
    h("label", {}, "Event type", typeInput), h("label", {}, "Stream", streamInput),
    h("button", { type: "submit", class: "primary", "data-testid": "apply-filters" }, "Filter"));

  const byPos = new Map(page.events.map((e) => [e.position, e]));
  const table = h("table", { class: "events", "data-testid": "events" },
    h("thead", {}, h("tr", {}, h("th", { class: "num" }, "position"), ["when", "type", "stream", "agent", "hash", "chain link", "data"].map((x) => h("th", {}, x)))),
    h("tbody", {}, page.events.map((e) => h("tr", { "data-position": e.position },
      h("td", { class: "num" }, e.position), h("td", {}, fmt.time(e.recorded_at)), h("td", { "data-field": "type" }, e.type),
      h("td", {}, h("code", {}, e.stream)), h("td", {}, e.meta.agent || "—"),
      h("td", { class: "hash" }, h("code", { title: e.hash, "data-field": "hash" }, fmt.short(e.hash, 16)), copyButton(e.hash)),
      h("td", {}, linkCell(e, byPos.get(e.position - 1))),
      h("td", {}, h("details", {}, h("summary", {}, "payload"), h("pre", { class: "mono" }, JSON.stringify(e.data, null, 1))))))));
  const first = page.events.length ? page.events[0].position : after;
  const pager = h("div", { class: "pager" },
    h("button", { disabled: back.length === 0 && after === 0, "data-testid": "prev-page",
      onclick: () => go({ type, stream, after: back.at(-1) || 0, back: back.slice(0, -1).join(",") }) }, "← Previous"),
    h("span", { "data-testid": "page-range" }, page.events.length ? `positions ${first}–${page.events.at(-1).position}` : "no events"),
    h("button", { disabled: page.next_after === null, "data-testid": "next-page",
      onclick: () => go({ type, stream, after: page.next_after, back: [...back, after].join(",") }) }, "Next →"));

  const cp = checkpoint instanceof Error
    ? h("p", { class: "muted", "data-testid": "checkpoint" }, checkpoint.message)
    : h("dl", { class: "kv", "data-testid": "checkpoint" },
      h("dt", {}, "position"), h("dd", { "data-field": "position" }, checkpoint.checkpoint?.position ?? checkpoint.position ?? "?"),
      h("dt", {}, "document"), h("dd", {}, h("details", {}, h("summary", {}, "signed JSON"), h("pre", { class: "mono" }, JSON.stringify(checkpoint, null, 1)))));

  const verifyOut = h("div", { "data-testid": "verify-result" });
  const verify = h("button", { class: "primary", "data-testid": "verify-now", onclick: async () => {
    verifyOut.replaceChildren(h("span", { class: "muted" }, "checking every hash…"));
    try {
      const r = await api("/audit/verify");
      verifyOut.replaceChildren(h("p", { class: r.ok ? "ok" : "bad", "data-ok": String(r.ok) },
        r.ok ? `Chain intact: ${fmt.n(r.checked)} events checked, head at position ${fmt.n(r.head_position)}.`
          : `Chain BROKEN at position ${r.first_bad_position}: ${r.reason}`));
    } catch (err) { verifyOut.replaceChildren(errorBox(err)); }
  } }, "Verify now");

  const receipt = h("textarea", { rows: 2, "data-testid": "receipt-input", placeholder: "paste a stamp receipt (clr2.…)" });
  const receiptOut = h("div", { "data-testid": "receipt-result" });
  const check = h("button", { "data-testid": "check-receipt", onclick: async () => {
    try {
      const r = await api("/stamps/verify", { method: "POST", body: { receipt: receipt.value.trim() } });
      receiptOut.replaceChildren(h("p", { class: r.valid ? "ok" : "bad", "data-valid": String(r.valid) }, r.valid ? "Valid receipt" : "Not valid", ": ", r.reason),
        h("dl", { class: "kv" }, ["position", "session_id", "agent", "stamp", "event_hash", "recorded_at", "scheme"]
          .filter((k) => r[k] !== null && r[k] !== undefined).map((k) => [h("dt", {}, k), h("dd", { "data-field": k }, String(r[k]))])));
    } catch (err) { receiptOut.replaceChildren(errorBox(err)); }
  } }, "Check receipt");

  // The tools in a row above, the log below them across the whole width: eight columns, hashes and streams whole.
  fill(root,
    h("div", { class: "panels" },
      h("div", { class: "panel" }, h("h3", {}, "Hash chain"),
        ctx.me.role === "agent" ? h("p", { class: "muted" }, "The chain check reads every agent's events: it needs an auditor or admin key.") : [verify, verifyOut]),
      h("div", { class: "panel" }, h("h3", {}, "Latest checkpoint"), cp),
      h("div", { class: "panel" }, h("h3", {}, "Stamp receipt checker"), receipt, check, receiptOut)),
    h("div", { class: "log" }, h("h2", {}, "Event log"), filters, pager, table),
  );
}
