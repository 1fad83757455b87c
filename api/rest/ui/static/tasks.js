// Tasks: the workflow board by status (GET /tasks), each card with its DNA; a task's transitions and refusals with
// their evidence, cleared DNA and reasons come from its stream in the log (GET /events?stream=task:<id>).
import { api, fill, errorBox, fmt, h } from "./lib.js";

// The workflow's statuses in its own order (ledger/workflow/*.yaml); a status the table does not name goes last.
const ORDER = ["pending", "ready", "active", "review", "approval", "testing", "rework", "blocked", "complete", "cancelled"];

function go(task) {
  location.hash = task ? `#/tasks?task=${encodeURIComponent(task)}` : "#/tasks";
}

function dnaList(dna) {
  const keys = Object.keys(dna);
  if (!keys.length) return h("span", { class: "muted" }, "no DNA");
  return h("dl", { class: "kv", "data-testid": "dna" }, keys.map((k) => [h("dt", {}, k),
    h("dd", { "data-dna": k }, typeof dna[k] === "string" ? dna[k] : JSON.stringify(dna[k]))]));
}

async function history(taskId) {
  const page = await api("/events", { params: { stream: `task:${taskId}`, limit: 200 } });
  return h("table", { "data-testid": "task-history" },
    h("thead", {}, h("tr", {}, h("th", { class: "num" }, "position"), ["when", "event", "by", "from → to", "evidence / reasons"].map((x) => h("th", {}, x)))),
    h("tbody", {}, page.events.map((e) => {
      const d = e.data;
      let what = "";
      if (e.type === "TaskTransitioned") {
        what = [
          h("div", { "data-field": "evidence" }, Object.entries(d.evidence || {}).map(([k, pos]) =>
            h("span", { class: "pill" }, `${k} @ `, h("a", { href: `#/audit?after=${pos - 1}` }, pos)))),
          d.cleared_dna && d.cleared_dna.length ? h("div", { class: "muted" }, `cleared DNA: ${d.cleared_dna.join(", ")}`) : null,
          d.rule ? h("div", { class: "muted" }, `rule: ${d.rule}`) : null,
        ];
      } else if (e.type === "TaskTransitionRefused") {
        what = h("ul", { class: "bad", "data-field": "reasons" }, d.codes.map((c, i) => h("li", {}, h("code", {}, c), ` ${d.reasons[i] || ""}`)));
      } else if (e.type === "TaskDnaUpdated" || e.type === "TaskCreated") {
        what = h("code", {}, JSON.stringify(d.set || d.dna || {}));
      }
      return h("tr", { "data-position": e.position, "data-type": e.type },
        h("td", { class: "num" }, e.position), h("td", {}, fmt.time(e.recorded_at)), h("td", {}, e.type),
        h("td", {}, `${e.meta.agent || "—"}${d.acting_role ? ` as ${d.acting_role}` : ""}`),
        h("td", {}, d.from_status ? `${d.from_status} → ${d.to_status}` : ""), h("td", {}, what));
    })));
}

export async function render(root, params) {
  const selected = params.get("task");
  const [list, detail] = await Promise.all([
    api("/tasks"),
    selected ? history(selected).catch((err) => errorBox(err)) : null,
  ]);
  const statuses = [...new Set(list.map((t) => t.status))]
    .sort((a, b) => (ORDER.indexOf(a) + 1 || 99) - (ORDER.indexOf(b) + 1 || 99) || a.localeCompare(b));
  const board = h("div", { class: "board", "data-testid": "board" }, statuses.map((st) => {
    const cards = list.filter((t) => t.status === st);
    return h("div", { class: "column", "data-status": st },
      h("h3", {}, `${st} (${cards.length})`),
      cards.map((t) => h("div", { class: `task${t.task_id === selected ? " selected" : ""}`, "data-task": t.task_id, onclick: () => go(t.task_id) },
        h("div", { class: "t" }, t.title), h("div", { class: "muted" }, h("code", {}, t.task_id), ` · ${t.task_type} · ${t.role}`),
        h("div", { class: "muted" }, `${t.transitions} transitions, ${t.refusals} refused`, t.blocked_from ? ` · blocked from ${t.blocked_from}` : ""),
        dnaList(t.dna))));
  }));
  const chosen = list.find((t) => t.task_id === selected);
  fill(root,
    h("h2", { "data-testid": "task-count", "data-count": list.length }, `${list.length} tasks`),
    list.length ? board : h("p", { class: "muted" }, "No tasks yet."),
    selected ? h("div", { class: "panel", "data-testid": "task-detail" },
      h("h3", {}, "Task ", h("code", {}, selected), chosen ? ` — ${chosen.title} (${chosen.status})` : ""),
      chosen ? h("p", { class: "muted" }, `next: ${chosen.next.join(", ") || "none"}`) : null,
      chosen ? dnaList(chosen.dna) : null, h("h3", {}, "Transitions with evidence"), detail) : null,
  );
}
