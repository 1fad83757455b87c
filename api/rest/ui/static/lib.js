// Shared helpers of the dashboard: the REST client (API key from sessionStorage), DOM building (text only, never
// innerHTML, so no recorded text can become markup) and the hand-drawn SVG charts.

export const KEY_STORE = "complianceLedger.apiKey";

export class ApiError extends Error {
  constructor(status, body) {
    const e = (body && body.error) || {};
    super(e.message || `HTTP ${status}`);
    this.status = status;
    this.code = e.code || `http_${status}`;
    this.hint = e.hint || "";
  }
}

let onUnauthorized = () => {};
export function whenUnauthorized(fn) { onUnauthorized = fn; }

// One REST call: the key (if any) as X-API-Key; an error body becomes an ApiError; a 401 asks for a key.
export async function api(path, { method = "GET", body, params } = {}) {
  const url = new URL(path, location.origin);
  for (const [k, v] of Object.entries(params || {})) {
    if (v !== undefined && v !== null && v !== "") url.searchParams.set(k, v);
  }
  const headers = { Accept: "application/json" };
  const key = sessionStorage.getItem(KEY_STORE);
  if (key) headers["X-API-Key"] = key;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const data = await res.json().catch(() => null);
  if (!res.ok) {
    const err = new ApiError(res.status, data);
    if (res.status === 401) onUnauthorized(err);
    throw err;
  }
  return data;
}

// h("td", {class: "num"}, 3) -> <td class="num">3</td>; children are text or nodes; null/false are skipped.
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "dataset") Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// Put ``children`` (nested lists; null/false skipped) in ``root`` in place of what it held.
export function fill(root, ...children) {
  root.replaceChildren(...children.flat(Infinity).filter((c) => c !== null && c !== undefined && c !== false));
}

export const fmt = {
  n: (x) => (x === null || x === undefined ? "—" : Number(x).toLocaleString("en")),
  pct: (x) => (x === null || x === undefined ? "—" : `${(x * 100).toFixed(1)}%`),
  ratio: (a, b) => (b ? a / b : null),
  time: (t) => (t ? t.replace("T", " ").replace(/(\.\d{3})\d*/, "$1").replace("+00:00", "Z") : "—"),
  short: (s, n = 12) => (s && s.length > n ? `${s.slice(0, n)}…` : s || ""),
};

// <input type="datetime-local"> value (read as UTC) -> ISO with Z, or null when empty.
export function localToIso(value) {
  return value ? `${value.length === 16 ? `${value}:00` : value}Z` : null;
}
export function isoToLocal(iso) {
  return iso ? iso.slice(0, 16) : "";
}

export function errorBox(err) {
  return h("p", { class: "error", "data-testid": "error" }, `${err.message}${err.hint ? ` — ${err.hint}` : ""}`);
}

const SVG = "http://www.w3.org/2000/svg";
function s(tag, attrs = {}, text) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}

function niceMax(v) {
  if (v <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

// A line chart: labels along x, one line per series ({name, color, values}); y from 0 to a round maximum.
export function lineChart(labels, series, { width = 900, height = 220, yLabel = "" } = {}) {
  const pad = { l: 44, r: 24, t: 12, b: 34 };
  const w = width - pad.l - pad.r;
  const hgt = height - pad.t - pad.b;
  const max = niceMax(Math.max(0, ...series.flatMap((x) => x.values)));
  const x = (i) => pad.l + (labels.length <= 1 ? w / 2 : (i * w) / (labels.length - 1));
  const y = (v) => pad.t + hgt - (v / max) * hgt;
  const svg = s("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": yLabel });
  const ticks = max <= 5 ? max : 4; // whole numbers for small counts
  for (let k = 0; k <= ticks; k++) {
    const v = (max * k) / ticks;
    svg.append(s("line", { x1: pad.l, x2: width - pad.r, y1: y(v), y2: y(v), stroke: "#e3e7ee" }));
    svg.append(s("text", { x: pad.l - 6, y: y(v) + 4, "text-anchor": "end", "font-size": 11, fill: "#5b6577" },
      Number.isInteger(v) ? v : v.toFixed(1)));
  }
  const every = Math.max(1, Math.ceil(labels.length / 12));
  labels.forEach((lab, i) => {
    if (i % every === 0 || i === labels.length - 1) {
      svg.append(s("text", { x: x(i), y: height - 12, "text-anchor": "middle", "font-size": 11, fill: "#5b6577" }, lab));
    }
  });
  for (const ser of series) {
    const pts = ser.values.map((v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(" ");
    svg.append(s("polyline", { points: pts, fill: "none", stroke: ser.color, "stroke-width": 2,
      "data-series": ser.name, "data-values": ser.values.join(",") }));
    ser.values.forEach((v, i) => {
      const dot = s("circle", { cx: x(i), cy: y(v), r: 2.5, fill: ser.color });
      dot.append(s("title", {}, `${ser.name} ${labels[i]}: ${v}`));
      svg.append(dot);
    });
  }
  const legend = h("div", { class: "legend" },
    series.map((ser) => h("span", {}, h("i", { style: `background:${ser.color}` }), ser.name)));
  return h("div", { class: "chart" }, svg, legend);
}

// The decay curve of a block: recency = exp(-λ·h) over active hours h, with a marker where the block is now.
export function decayChart(lambda, hoursNow, { width = 420, height = 180 } = {}) {
  const pad = { l: 40, r: 10, t: 10, b: 30 };
  const w = width - pad.l - pad.r;
  const hgt = height - pad.t - pad.b;
  const halfLife = lambda > 0 ? Math.LN2 / lambda : Infinity;
  const span = Math.max(1, Math.min(1e6, Number.isFinite(halfLife) ? Math.max(hoursNow * 1.5, halfLife * 4) : hoursNow * 2 || 24));
  const x = (t) => pad.l + (t / span) * w;
  const y = (v) => pad.t + hgt - v * hgt;
  const svg = s("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": "decay curve" });
  for (const v of [0, 0.5, 1]) {
    svg.append(s("line", { x1: pad.l, x2: width - pad.r, y1: y(v), y2: y(v), stroke: "#e3e7ee" }));
    svg.append(s("text", { x: pad.l - 6, y: y(v) + 4, "text-anchor": "end", "font-size": 11, fill: "#5b6577" }, v));
  }
  const pts = [];
  for (let i = 0; i <= 80; i++) {
    const t = (span * i) / 80;
    pts.push(`${x(t).toFixed(1)},${y(Math.exp(-lambda * t)).toFixed(1)}`);
  }
  svg.append(s("polyline", { points: pts.join(" "), fill: "none", stroke: "#2457c5", "stroke-width": 2 }));
  const now = Math.min(hoursNow, span);
  svg.append(s("circle", { cx: x(now), cy: y(Math.exp(-lambda * now)), r: 4, fill: "#b3261e" }));
  svg.append(s("text", { x: pad.l, y: height - 8, "font-size": 11, fill: "#5b6577" }, "0 h"));
  svg.append(s("text", { x: width - pad.r, y: height - 8, "text-anchor": "end", "font-size": 11, fill: "#5b6577" },
    `${span.toFixed(span < 10 ? 1 : 0)} active hours`));
  return h("div", { class: "chart" }, svg,
    h("div", { class: "legend" }, h("span", {}, h("i", { style: "background:#2457c5" }), "recency exp(−λh)"),
      h("span", {}, h("i", { style: "background:#b3261e" }), `now: ${hoursNow.toFixed(2)} h`)));
}
