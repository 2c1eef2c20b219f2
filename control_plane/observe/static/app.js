// The inart web view: draws the document of /api/state (control_plane/observe/view.py) and
// redraws it on every server-sent "state" event.  Plain JS and SVG, no dependencies.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const PS_COLOURS = ["#7b4fb8", "#d2493f", "#2a9d8f", "#e07b00", "#3f8fd2", "#8a6d3b",
                    "#c2185b", "#5c6bc0"];
const token = new URLSearchParams(location.search).get("token");
const withToken = (path) => token ? `${path}?token=${encodeURIComponent(token)}` : path;
let selected = null;  // the job whose plan is drawn (default: the first)
let latest = null;

function el(name, attrs, parent) {
  const node = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  if (parent) parent.appendChild(node);
  return node;
}

// green (idle) through yellow to red (at or past capacity)
function loadColour(u) {
  const hue = 120 * (1 - Math.max(0, Math.min(1, u)));
  return `hsl(${hue}, ${60 + 15 * Math.min(1, u)}%, ${45 + 5 * Math.min(1, u)}%)`;
}

function psColour(doc, ps) {
  const pss = doc.nodes.filter((n) => n.kind === "ps").map((n) => n.id);
  return PS_COLOURS[Math.max(0, pss.indexOf(ps)) % PS_COLOURS.length];
}

// a path through node centres, shifted sideways by `offset` so parallel flows stay apart
function pathD(pos, nodes, offset) {
  const pts = nodes.filter((n) => pos[n]).map((n) => pos[n]);
  if (pts.length < 2) return "";
  return pts.map((p, i) => {
    const a = pts[Math.max(0, i - 1)], b = pts[Math.min(pts.length - 1, i + 1)];
    const dx = b.x - a.x, dy = b.y - a.y, len = Math.hypot(dx, dy) || 1;
    return `${i ? "L" : "M"}${(p.x - dy / len * offset).toFixed(1)},` +
           `${(p.y + dx / len * offset).toFixed(1)}`;
  }).join(" ");
}

function drawNetwork(doc, job) {
  const svg = document.getElementById("network");
  svg.textContent = "";
  svg.setAttribute("viewBox", `0 0 ${doc.width} ${doc.height}`);
  const pos = {};
  for (const n of doc.nodes) pos[n.id] = n;
  const many = doc.nodes.length > 60;  // fattree:8 has 208 nodes: smaller marks
  const links = el("g", { id: "links" }, svg);
  for (const l of doc.links) {
    const a = pos[l.a], b = pos[l.b];
    if (!a || !b) continue;
    const line = el("line", {
      x1: a.x, y1: a.y, x2: b.x, y2: b.y, class: "link" + (l.down ? " down" : ""),
      stroke: loadColour(l.utilisation), "stroke-width": many ? 2 : 5,
      "data-link": `${l.a}-${l.b}`, "data-utilisation": l.utilisation }, links);
    el("title", {}, line).textContent =
      `${l.a} <-> ${l.b}: ` + Object.entries(l.load).map(([d, v]) => `${d} ${v.toFixed(3)}`)
        .join(", ") + ` of ${l.capacity} (${(100 * l.utilisation).toFixed(0)}%)` +
      (l.down ? " DOWN" : "");
  }
  const plan = job && job.plan;
  const drawn = el("g", { id: "plan", "data-plan-version": job ? job.version : 0,
                          "data-job": job ? job.id : 0 }, svg);
  if (plan) {
    plan.flows.forEach((f, i) => {
      const d = pathD(pos, f.path, ((i % 5) - 2) * (many ? 1 : 2.5));
      if (d) el("path", { d, class: "flow", stroke: psColour(doc, f.ps),
                          "data-flow": `${f.worker}->${f.ps}` }, drawn);
    });
    for (const s of plan.streams) {
      const d = pathD(pos, s.path, 0);
      if (d) el("path", { d, class: "stream", stroke: psColour(doc, s.ps),
                          "data-stream": `${s.switch}->${s.ps}` }, drawn);
    }
  }
  const aggregating = new Set(plan ? plan.aggregate_at : []);
  const nodes = el("g", { id: "nodes" }, svg);
  const r = many ? 7 : 16;
  const order = { worker: 0, ps: 1, switch: 2 };  // PSs drawn over their crowded workers
  const sorted = [...doc.nodes].sort((a, b) => order[a.kind] - order[b.kind]);
  for (const n of sorted) {
    const g = el("g", { class: `node ${n.kind}`, "data-node": n.id, "data-kind": n.kind,
                        transform: `translate(${n.x},${n.y})` }, nodes);
    if (n.kind === "switch") {
      const agg = aggregating.has(n.id);
      el("rect", { x: -r * 1.6, y: -r, width: r * 3.2, height: r * 2, rx: 4,
                   fill: agg ? "#f29d1f" : "#3a4a66", stroke: agg ? "#a35f00" : "none",
                   "stroke-width": 2, "data-aggregates": agg }, g);
    } else if (n.kind === "ps") {
      el("rect", { x: -r, y: -r, width: 2 * r, height: 2 * r, rx: 3, fill: psColour(doc, n.id) },
         g);
      if (plan && plan.partition[n.id] !== undefined) {
        el("text", { y: -r - 5, class: "share" }, g).textContent =
          `${(100 * plan.partition[n.id]).toFixed(0)}%`;
      }
    } else {
      el("circle", { r, fill: "#3f8fd2" }, g);
    }
    if (!many || n.kind === "switch") {
      el("text", { y: 4, fill: "#fff" }, g).textContent = n.id;
    }
    el("title", {}, g).textContent = `${n.kind} ${n.id}` + (aggregating.has(n.id) ?
      " (aggregates)" : "");
  }
}

function cell(row, text, cls) {
  const td = document.createElement("td");
  td.textContent = text;
  if (cls) td.className = cls;
  row.appendChild(td);
}

function fmt(x) { return x === null || x === undefined ? "–" : (+x).toPrecision(3); }

function drawJobs(doc) {
  const body = document.querySelector("#jobs tbody");
  body.textContent = "";
  for (const j of doc.jobs) {
    const row = document.createElement("tr");
    row.className = "job" + (j.id === selected ? " selected" : "");
    row.dataset.job = j.id;
    row.dataset.round = j.round === null ? "" : j.round;
    row.dataset.version = j.version;
    cell(row, `${j.id}${j.name ? " " + j.name : ""}`);
    cell(row, j.state, "state");
    cell(row, j.round === null ? "–" : j.round, "round");
    cell(row, j.version, "version");
    cell(row, `${fmt(j.rate_plan)} ${j.unit}`, "rate-plan");
    cell(row, j.rate_measured === null ? "–" :
      `${fmt(j.rate_measured)} (${fmt(j.rate_measured / j.rate_plan)}×)`, "rate-measured");
    cell(row, j.verdict || "–", "verdict");
    row.addEventListener("click", () => { selected = j.id; render(latest); });
    body.appendChild(row);
  }
}

function drawEvents(doc) {
  const list = document.getElementById("events");
  list.textContent = "";
  for (const e of doc.events) {
    const item = document.createElement("li");
    item.textContent = e.text;
    list.appendChild(item);
  }
  list.scrollTop = list.scrollHeight;
}

function render(doc) {
  latest = doc;
  document.getElementById("title").textContent = doc.title;
  document.getElementById("load-kind").textContent = doc.load_kind;
  if (!doc.jobs.some((j) => j.id === selected)) selected = doc.jobs.length ? doc.jobs[0].id : null;
  drawNetwork(doc, doc.jobs.find((j) => j.id === selected));
  drawJobs(doc);
  drawEvents(doc);
}

function connect() {
  const status = document.getElementById("status");
  const source = new EventSource(withToken("api/events"));
  source.addEventListener("state", (ev) => {
    status.textContent = `live · ${new Date().toLocaleTimeString()}`;
    render(JSON.parse(ev.data));
  });
  source.onerror = () => { status.textContent = "reconnecting…"; };
}

connect();
