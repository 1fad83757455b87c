// Overview: per agent, the gate's counts over a window (GET /reports/compliance/series) and in total as of a
// moment (GET /reports/compliance?as_of=), parameter compliance and enforcement levels (GET /reports/enforcement),
// a time series chart and the problem areas. Three requests, whatever the size of the log.
import { api, fill, errorBox, fmt, h, isoToLocal, lineChart, localToIso } from "./lib.js";

const WINDOWS = {
  "24h": { label: "last 24 hours, by hour", hours: 24, bucket: "hour" },
  "7d": { label: "last 7 days, by day", hours: 24 * 7, bucket: "day" },
  "30d": { label: "last 30 days, by day", hours: 24 * 30, bucket: "day" },
};

const COLUMNS = [
  ["searches", "Searches", (a) => a.searches],
  ["passes", "Stamps", (a) => a.passes],
  ["fails", "Refusals", (a) => a.fails],
  ["pass_rate", "Pass rate", (a) => a.pass_rate, fmt.pct],
  ["anchor_pass_rate", "Anchor pass rate", (a) => fmt.ratio(a.anchor_passes, a.anchor_attempts), fmt.pct],
  ["lockouts", "Lockouts", (a) => a.lockouts],
  ["transitions", "Transitions", (a) => a.transitions],
  ["transition_refusals", "Transition refusals", (a) => a.transition_refusals],
];

function agentTable(rows, testid) {
  if (!rows.length) return h("p", { class: "muted", "data-testid": testid }, "Nothing recorded.");
  return h("table", { "data-testid": testid },
    h("thead", {}, h("tr", {}, h("th", {}, "Agent"), COLUMNS.map(([, label]) => h("th", { class: "num" }, label)),
      h("th", {}, "Refusal reasons"))),
    h("tbody", {}, rows.map((a) => h("tr", { "data-agent": a.agent },
      h("td", {}, a.agent),
      COLUMNS.map(([field, , get, show]) => h("td", { class: "num", "data-field": field }, (show || fmt.n)(get(a)))),
      h("td", { "data-field": "refusal_reasons" },
        Object.entries(a.refusal_reasons).map(([code, n]) => h("span", { class: "pill" }, `${code} ×${n}`))),
    ))));
}

function sum(rows, field) {
  return rows.reduce((t, a) => t + a[field], 0);
}

export async function render(root, params, ctx) {
  const win = WINDOWS[params.get("window")] ? params.get("window") : "24h";
  const asOf = params.get("as_of") || "";
  const agent = params.get("agent") || "";
  const end = asOf ? new Date(asOf) : new Date();
  const start = new Date(end.getTime() - WINDOWS[win].hours * 3600e3);
  const [report, series, enforcement] = await Promise.all([
    api("/reports/compliance", { params: { as_of: asOf || null, agent: agent || null } }),
    api("/reports/compliance/series", {
      params: { start: start.toISOString(), end: end.toISOString(), bucket: WINDOWS[win].bucket, agent: agent || null },
    }),
    api("/reports/enforcement", { params: { as_of: asOf || null, agent: agent || null } }),
  ]);

  const go = (changes) => {
    const next = new URLSearchParams({ window: win, as_of: asOf, agent, ...changes });
    for (const [k, v] of [...next]) if (!v) next.delete(k);
    location.hash = `#/overview?${next}`;
  };
  const asOfInput = h("input", { type: "datetime-local", step: 1, value: isoToLocal(asOf), "data-testid": "as-of" });
  const agents = [...new Set([...report.agents.map((a) => a.agent), agent].filter(Boolean))].sort();
  const controls = h("div", { class: "controls" },
    h("label", {}, "As of (UTC)", asOfInput),
    h("button", { onclick: () => go({ as_of: localToIso(asOfInput.value) || "" }), "data-testid": "apply-as-of" }, "Show"),
    h("button", { onclick: () => go({ as_of: "" }) }, "Now"),
    h("label", {}, "Window", h("select", { "data-testid": "window", onchange: (e) => go({ window: e.target.value }) },
      Object.entries(WINDOWS).map(([k, w]) => h("option", { value: k, selected: k === win }, w.label)))),
    h("label", {}, "Agent", h("select", { "data-testid": "agent", onchange: (e) => go({ agent: e.target.value }) },
      h("option", { value: "" }, "every agent"),
      agents.map((a) => h("option", { value: a, selected: a === agent }, a)))),
  );

  const totals = series.totals;
  const stamps = sum(totals, "passes");
  const refusals = sum(totals, "fails");
  const cards = h("div", { class: "cards", "data-testid": "window-cards" },
    [["searches", "searches", sum(totals, "searches")], ["stamps", "stamps", stamps], ["refusals", "refusals", refusals],
      ["pass_rate", "pass rate", fmt.pct(fmt.ratio(stamps, stamps + refusals))],
      ["lockouts", "anchor lockouts", sum(totals, "lockouts")],
      ["transition_refusals", "transition refusals", sum(totals, "transition_refusals")]]
      .map(([key, label, n]) => h("div", { class: "card", "data-card": key },
        h("div", { class: "n" }, typeof n === "number" ? fmt.n(n) : n), h("div", { class: "l" }, label))));

  const labels = series.points.map((p) => (series.bucket === "hour" ? p.start.slice(11, 16) : p.start.slice(5, 10)));
  const per = (field) => series.points.map((p) => sum(p.agents, field));
  const chart = lineChart(labels, [
    { name: "searches", color: "#2457c5", values: per("searches") },
    { name: "stamps", color: "#1f7a3d", values: per("passes") },
    { name: "refusals", color: "#b3261e", values: per("fails") },
    { name: "transition refusals", color: "#a15c00", values: per("transition_refusals") },
  ], { yLabel: `events per ${series.bucket}` });
  chart.setAttribute("data-testid", "series-chart");
  Object.assign(chart.dataset, { start: series.start, end: series.end, bucket: series.bucket });

  const levels = h("table", { "data-testid": "enforcement-agents" },
    h("thead", {}, h("tr", {}, h("th", {}, "Agent"), h("th", { class: "num" }, "Checks"), h("th", { class: "num" }, "Passed"),
      h("th", { class: "num" }, "Parameter compliance"), h("th", {}, "Current enforcement level (tool/action)"))),
    h("tbody", {}, enforcement.by_agent.map((a) => h("tr", { "data-agent": a.agent },
      h("td", {}, a.agent), h("td", { class: "num", "data-field": "checks" }, fmt.n(a.checks)),
      h("td", { class: "num", "data-field": "passed" }, fmt.n(a.passed)),
      h("td", { class: "num", "data-field": "compliance_rate" }, fmt.pct(a.compliance_rate)),
      h("td", {}, a.tools.map((t) => h("span", { class: `pill ${t.current_level}`, title: `base ${t.base_level}` },
        `${t.tool}/${t.action}: ${t.current_level}`)))))));
  if (!enforcement.by_agent.length) levels.replaceChildren(h("caption", { class: "muted" }, "No parameter checks recorded."));

  const problems = enforcement.problem_areas.length
    ? h("ul", { "data-testid": "problem-areas" }, enforcement.problem_areas.map((p) => h("li", {},
      h("strong", {}, `${p.scope === "agent" ? `${p.agent}: ` : ""}${p.tool}/${p.action}`),
      ` — compliance ${fmt.pct(p.compliance_rate)} over ${p.checks} checks, ${p.failed} failed, ${p.blocked} blocked`,
      p.common_missing.length ? `; most often missing: ${p.common_missing.map((m) => `${m.parameter} (${m.count})`).join(", ")}` : "",
      p.common_invalid.length ? `; most often invalid: ${p.common_invalid.map((m) => `${m.parameter} (${m.count})`).join(", ")}` : "")))
    : h("p", { class: "muted", "data-testid": "problem-areas" },
      `No tool/action under ${fmt.pct(enforcement.problem_threshold)} parameter compliance.`);
  const gateProblems = report.agents.filter((a) => a.lockouts > 0 || (a.pass_rate !== null && a.pass_rate < 0.5));

  fill(root,
    controls,
    h("h2", {}, `In the window: ${fmt.time(series.start)} – ${fmt.time(series.end)} `,
      h("span", { class: "muted" }, `(log positions ${series.first_position}–${series.last_position})`)),
    cards, chart,
    h("h3", {}, "Per agent in the window"), agentTable(series.totals, "window-agents"),
    h("h2", {}, "Per agent, all time ", h("span", { "data-testid": "as-of-label" },
      asOf ? `as of ${fmt.time(asOf)}` : "up to now"), h("span", { class: "muted" }, ` (position ${report.position})`)),
    agentTable(report.agents, "total-agents"),
    h("h2", {}, "Parameter compliance and enforcement"),
    h("div", { class: "cards" }, h("div", { class: "card", "data-card": "parameter-compliance" },
      h("div", { class: "n" }, fmt.pct(enforcement.totals.compliance_rate)),
      h("div", { class: "l" }, `of ${fmt.n(enforcement.totals.checks)} parameter checks valid`))),
    levels,
    h("h2", {}, "Problem areas"), problems,
    gateProblems.length
      ? h("ul", { "data-testid": "gate-problems" }, gateProblems.map((a) => h("li", {},
        `${a.agent}: pass rate ${fmt.pct(a.pass_rate)}, ${a.lockouts} anchor lockout(s)`)))
      : null,
  );
  void ctx;
}
