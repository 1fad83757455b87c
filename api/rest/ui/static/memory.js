// Memory: blocks with tier and score breakdown (GET /memory/blocks), one block's decay curve, history and
// co-retrieval neighbours (GET /memory/blocks/{id}), the search box (GET /memory/lookup: the real index, recorded
// nowhere) and, for an administrator only, supersede / forget / curate.
import { api, fill, decayChart, errorBox, fmt, h } from "./lib.js";

const TIERS = ["", "permanent", "durable", "standard", "ephemeral"];
const PARTS = [["recency", "#2457c5"], ["confidence", "#1f7a3d"], ["centrality", "#a15c00"], ["reinforcement", "#7a3db3"]];

function breakdownBar(score) {
  return h("span", { class: "bar", title: PARTS.map(([p]) => `${p} ${score[p].toFixed(3)} × ${score.weights[p] ?? 0}`).join("\n") },
    PARTS.map(([p, color]) => h("i", { style: `width:${(100 * score[p] * (score.weights[p] ?? 0)).toFixed(1)}%;background:${color}` })));
}

function go(params) {
  const next = new URLSearchParams(params);
  for (const [k, v] of [...next]) if (!v) next.delete(k);
  location.hash = `#/memory?${next}`;
}

async function detail(id, params, ctx) {
  const d = await api(`/memory/blocks/${encodeURIComponent(id)}`);
  const b = d.block;
  const sc = b.score;
  const pane = h("div", { class: "panel", "data-testid": "block-detail", "data-block": b.block_id },
    h("h3", {}, "Block ", h("code", {}, b.block_id)),
    h("p", { "data-testid": "block-content" }, b.content),
    h("dl", { class: "kv" },
      h("dt", {}, "tier"), h("dd", { "data-field": "tier" }, b.tier),
      h("dt", {}, "tags"), h("dd", {}, b.tags.map((t) => h("span", { class: "pill" }, t))),
      h("dt", {}, "category"), h("dd", {}, b.category),
      h("dt", {}, "decay rate λ"), h("dd", { "data-field": "decay_rate" }, b.decay_rate),
      h("dt", {}, "created"), h("dd", {}, fmt.time(b.created_at)),
      h("dt", {}, "last reinforced"), h("dd", {}, fmt.time(b.last_reinforced_at)),
      h("dt", {}, "archived"), h("dd", {}, b.archived_at ? fmt.time(b.archived_at) : "no"),
      b.superseded_by ? [h("dt", {}, "superseded by"), h("dd", {}, h("a", { href: `#/memory?block=${b.superseded_by}` }, b.superseded_by))] : null),
    h("h3", {}, "Score breakdown"),
    h("table", { "data-testid": "score-breakdown" },
      h("thead", {}, h("tr", {}, h("th", {}, "part"), h("th", { class: "num" }, "value"), h("th", { class: "num" }, "weight"))),
      h("tbody", {},
        ["similarity", ...PARTS.map(([p]) => p)].map((p) => h("tr", { "data-part": p },
          h("td", {}, p), h("td", { class: "num" }, sc[p].toFixed(4)), h("td", { class: "num" }, sc.weights[p] ?? 0))),
        h("tr", { "data-part": "total" }, h("td", {}, h("strong", {}, "total")), h("td", { class: "num" }, sc.total.toFixed(4)), h("td", {})))),
    h("h3", {}, "Decay over active hours"),
    decayChart(b.decay_rate, sc.active_hours_since_reinforced),
    h("h3", {}, `Co-retrieval neighbours (${d.neighbours.length})`),
    d.neighbours.length
      ? h("ul", { "data-testid": "neighbours" }, d.neighbours.map((n) => h("li", {},
        h("a", { href: `#/memory?block=${n.block_id}` }, n.block_id), ` — recalled together ${n.count}×, last ${fmt.time(n.last_co_retrieved_at)}`)))
      : h("p", { class: "muted", "data-testid": "neighbours" }, "Never recalled together with another block."),
    h("h3", {}, `History (${d.history.length} events)`),
    h("table", { "data-testid": "block-history" },
      h("thead", {}, h("tr", {}, h("th", { class: "num" }, "position"), h("th", {}, "when"), h("th", {}, "event"), h("th", {}, "agent"))),
      h("tbody", {}, d.history.map((e) => h("tr", {},
        h("td", { class: "num" }, h("a", { href: `#/audit?after=${e.position - 1}` }, e.position)),
        h("td", {}, fmt.time(e.recorded_at)), h("td", {}, e.type), h("td", {}, e.agent || "—"))))),
  );
  if (ctx.admin && !b.archived_at && !b.superseded_by) pane.append(adminActions(b, params));
  return pane;
}

function adminActions(b, params) {
  const out = h("p", { "data-testid": "admin-result" });
  const newText = h("textarea", { rows: 3, "data-testid": "supersede-text", placeholder: "the corrected text" });
  const reason = h("input", { size: 40, "data-testid": "forget-reason", placeholder: "why it must go (recorded)" });
  const act = async (fn) => {
    out.replaceChildren();
    try { out.replaceChildren(h("span", { class: "ok" }, await fn())); } catch (err) { out.replaceChildren(errorBox(err)); }
  };
  return h("div", { "data-testid": "admin-actions" },
    h("h3", {}, "Administrator actions"),
    h("label", {}, "Supersede with a corrected text", newText),
    h("button", { class: "primary", "data-testid": "supersede", onclick: () => act(async () => {
      const r = await api(`/memory/blocks/${b.block_id}/supersede`, { method: "POST", body: { content: newText.value } });
      go({ ...Object.fromEntries(params), block: r.new_block_id });
      return `superseded by ${r.new_block_id} (position ${r.position})`;
    }) }, "Supersede"),
    h("div", {}, h("label", {}, "Forget (removes the block from recall; the log keeps the fact) ", reason),
      h("button", { class: "danger", "data-testid": "forget", onclick: () => act(async () => {
        if (!confirm(`Forget block ${b.block_id}?`)) return "cancelled";
        const r = await api(`/memory/blocks/${b.block_id}/forget`, { method: "POST", body: { reason: reason.value } });
        go({ ...Object.fromEntries(params), block: "" });
        return `forgotten at position ${r.position}`;
      }) }, "Forget")),
    out);
}

export async function render(root, params, ctx) {
  const filters = { tag: params.get("tag") || "", tier: params.get("tier") || "", archived: params.get("archived") || "false" };
  const query = params.get("q") || "";
  const selected = params.get("block");
  const [list, found, pane] = await Promise.all([
    api("/memory/blocks", { params: { ...filters, limit: 50 } }),
    query ? api("/memory/lookup", { params: { query, limit: 20 } }) : null,
    selected ? detail(selected, params, ctx).catch((err) => errorBox(err)) : null,
  ]);
  const tag = h("input", { value: filters.tag, placeholder: "project/ or a tag", "data-testid": "filter-tag" });
  const tier = h("select", { "data-testid": "filter-tier" }, TIERS.map((t) => h("option", { value: t, selected: t === filters.tier }, t || "any tier")));
  const archived = h("select", { "data-testid": "filter-archived" },
    [["false", "live"], ["true", "archived"], ["any", "live and archived"]].map(([v, l]) => h("option", { value: v, selected: v === filters.archived }, l)));
  const search = h("input", { type: "search", value: query, placeholder: "search memory", "data-testid": "search-input", size: 30 });
  const apply = (ev) => { ev.preventDefault(); go({ tag: tag.value, tier: tier.value, archived: archived.value, q: search.value }); };
  const controls = h("form", { class: "controls", onsubmit: apply },
    h("label", {}, "Tag", tag), h("label", {}, "Tier", tier), h("label", {}, "Blocks", archived),
    h("label", {}, "Search (the ledger's index; not recorded)", search),
    h("button", { type: "submit", class: "primary", "data-testid": "apply-filters" }, "Apply"),
    ctx.admin ? h("button", { type: "button", "data-testid": "curate", title: "archive blocks decayed below the threshold",
      onclick: async (ev) => {
        const r = await api("/memory/curate", { method: "POST" });
        ev.target.after(h("span", { class: "ok", "data-testid": "curate-result" }, ` curated: ${r.archived} archived, ${r.edges_pruned} edges pruned`));
      } }, "Curate (archive decayed)") : h("span", { class: "admin-only-note", "data-testid": "read-only-note" },
      "Read-only: supersede, forget and curate need the admin key."));

  const rows = list.blocks.map((b) => h("tr", {
    class: `clickable${b.block_id === selected ? " selected" : ""}`, "data-block": b.block_id,
    onclick: () => go({ ...Object.fromEntries(params), block: b.block_id }),
  },
  h("td", {}, h("code", {}, fmt.short(b.block_id, 14))), h("td", { "data-field": "tier" }, b.tier),
  h("td", {}, b.tags.map((t) => h("span", { class: "pill" }, t))),
  h("td", {}, fmt.short(b.content, 90)),
  h("td", { class: "num", "data-field": "score" }, b.score.total.toFixed(3)), h("td", {}, breakdownBar(b.score)),
  h("td", {}, b.archived_at ? "archived" : b.superseded_by ? "superseded" : "live")));

  fill(root,
    controls,
    found ? h("div", { class: "panel", "data-testid": "search-results" },
      h("h3", {}, `${found.count} found for “${found.query}”`),
      h("ol", {}, found.results.map((r) => h("li", { "data-block": r.block_id },
        h("a", { href: `#/memory?block=${r.block_id}` }, fmt.short(r.block_id, 14)), ` (score ${r.score.toPrecision(3)}) ${fmt.short(r.content, 120)}`)))) : null,
    h("div", { class: "split" },
      h("div", {},
        h("h2", { "data-testid": "block-count", "data-count": list.count },
          `${fmt.n(list.count)} blocks`, list.count > list.blocks.length ? ` (best ${list.blocks.length} shown)` : "",
          h("span", { class: "muted" }, ` · ${list.active_hours.toFixed(2)} active hours · `),
          h("span", { class: "muted", "data-testid": "memory-position", "data-position": list.position,
            title: "the blocks as the log stands at this position (events after the last memory change did not change them)" },
          `log head at position ${fmt.n(list.position)}`)),
        h("table", { "data-testid": "blocks" },
          h("thead", {}, h("tr", {}, ["id", "tier", "tags", "content"].map((x) => h("th", {}, x)),
            h("th", { class: "num" }, "score"), h("th", {}, "breakdown"), h("th", {}, "state"))),
          h("tbody", {}, rows)),
        h("div", { class: "legend" }, PARTS.map(([p, c]) => h("span", {}, h("i", { style: `background:${c}` }), p)))),
      pane || h("div", { class: "panel muted" }, "Select a block to see its score, decay curve, history and neighbours.")),
  );
}
