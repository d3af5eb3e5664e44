// The xccd dashboard: hash routes (#jobs, #job/ID, #workers, #puzzle) over
// the JSON API under /api/. Every value from the server or the user is put
// in the page with textContent (never as markup); a puzzle's SVG picture is
// an <img> of a data: URL, where no script runs.
"use strict";

// The API key lives in the tab's sessionStorage: sent as a header on every
// API call, forgotten when the tab closes (never a cookie, so no other site
// can make the browser send it).
const KEY = "xccd-api-key";
let timer = null;

function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(props || {})) {
    if (name === "text") node.textContent = value;
    else if (name === "on") for (const [ev, f] of Object.entries(value)) node.addEventListener(ev, f);
    else node.setAttribute(name, value);
  }
  for (const child of children) node.append(child);
  return node;
}

function showError(message) {
  const box = document.getElementById("error");
  box.textContent = message || "";
  box.hidden = !message;
}

async function api(method, path, body) {
  const headers = {};
  const key = sessionStorage.getItem(KEY);
  if (key) headers["authorization"] = "Bearer " + key;
  if (body !== undefined) headers["content-type"] = "application/json";
  const response = await fetch("/api/" + path, {
    method, headers, body: body === undefined ? undefined : JSON.stringify(body),
  });
  const answer = await response.json();
  if (response.status === 401) {
    document.getElementById("key-form").hidden = false;
    throw new Error(key
      ? "the API key was refused: it is not one of this server's keys; enter another above"
      : "this server takes API keys: enter yours above");
  }
  if (!response.ok) throw new Error(answer.message || response.statusText);
  return answer;
}

function number(n) { return Math.round(n).toLocaleString("en"); }
function seconds(s) {
  if (!s || s <= 0) return "";
  if (s < 120) return s.toFixed(1) + " s";
  if (s < 7200) return (s / 60).toFixed(1) + " min";
  return (s / 3600).toFixed(1) + " h";
}
function when(unix) { return unix ? new Date(unix * 1000).toLocaleTimeString() : ""; }

function progressCell(job) {
  const fraction = job.state === "SUCCEEDED" && job.summary && job.summary.exhausted ? 1 : job.progress.fraction_done;
  const bar = el("progress", { max: "1", value: String(fraction) });
  return el("td", { class: "fraction" }, bar, " " + (100 * fraction).toFixed(2) + "%");
}

// A small chart of a job's progress over time, drawn from the samples the
// page has polled (from the job's start, where everything is 0): the tree's
// fraction done and the solutions found, each scaled to its latest value,
// against the elapsed time.
const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attributes) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  return node;
}
function traceChart(samples) {
  const width = 360, plot = 110, height = plot + 18, pad = 4;
  const chart = svg("svg", { id: "job-trace", width, height, viewBox: `0 0 ${width} ${height}`,
    role: "img", "data-samples": samples.length });
  chart.append(svg("rect", { x: 0, y: 0, width, height: plot, class: "frame" }));
  if (samples.length === 0) return chart;
  const last = samples[samples.length - 1];
  const span = Math.max(1e-9, last.t);
  const x = t => pad + (width - 2 * pad) * (t / span);
  const y = v => plot - pad - (plot - 2 * pad) * Math.min(1, Math.max(0, v));
  const lines = [["fraction", s => s.fraction / Math.max(1e-12, last.fraction)],
    ["solutions", s => s.solutions / Math.max(1, last.solutions)]];
  for (const [name, value] of lines) {
    chart.append(svg("polyline", { class: name, fill: "none",
      points: [{ t: 0, fraction: 0, solutions: 0 }, ...samples]
        .map(s => x(s.t).toFixed(1) + "," + y(value(s)).toFixed(1)).join(" ") }));
  }
  const label = svg("text", { x: pad, y: height - 4, class: "legend" });
  label.textContent = "— tree done (" + (100 * last.fraction).toFixed(2) + "%)  - - solutions (" +
    number(last.solutions) + ")  over " + (seconds(span) || "0 s");
  chart.append(label);
  return chart;
}

// Calls `draw` now and every second until the route changes.
function poll(draw) {
  const run = async () => {
    try { await draw(); showError(""); } catch (e) { showError(String(e.message || e)); }
  };
  run();
  timer = setInterval(run, 1000);
}

function jobsView(main) {
  const filter = el("select", { id: "state-filter" });
  for (const state of ["", "QUEUED", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED"]) {
    filter.append(el("option", { value: state, text: state || "all states" }));
  }
  filter.value = sessionStorage.getItem("state-filter") || "";
  filter.addEventListener("change", () => sessionStorage.setItem("state-filter", filter.value));
  const body = el("tbody");
  const more = el("p", { id: "jobs-more" });
  main.append(
    el("h2", { text: "Jobs" }), more,
    el("div", { class: "toolbar" }, el("label", { text: "State " }, filter)),
    el("table", { id: "jobs-table" },
      el("thead", {}, el("tr", {}, ...["Job", "State", "Kind", "Progress (tree)", "ETA", "Nodes", "Nodes/s",
        "Solutions", "End reason"].map(h => el("th", { text: h })))),
      body));
  poll(async () => {
    const state = filter.value;
    const answer = await api("GET", "jobs" + (state ? "?state=" + encodeURIComponent(state) : ""));
    more.textContent = answer.more ? "Only the newest " + number(answer.jobs.length) + " jobs are listed." : "";
    body.replaceChildren(...answer.jobs.slice().reverse().map(job => el("tr", { "data-job": job.id },
      el("td", {}, el("a", { href: "#job/" + encodeURIComponent(job.id), text: job.id })),
      el("td", { class: "state", text: job.state }),
      el("td", { class: "kind", text: job.kind }),
      progressCell(job),
      el("td", { text: seconds(job.progress.eta_seconds) }),
      el("td", { class: "nodes", text: number(job.progress.nodes) }),
      el("td", { text: number(job.progress.nodes_per_second) }),
      el("td", { class: "solutions", text: number(job.summary ? job.summary.solutions : job.progress.solutions) }),
      el("td", { class: "reason", text: job.summary ? job.summary.reason : "" }))));
  });
}

function jobView(main, id) {
  const stats = el("dl", { id: "job-stats" });
  const solutions = el("ol", { id: "job-solutions" });
  const pageSize = 10;
  let offset = 0;
  const cancel = el("button", { id: "cancel-button", type: "button", text: "Cancel" });
  const remove = el("button", { id: "delete-button", type: "button", text: "Delete" });
  const previous = el("button", { type: "button", text: "Previous solutions" });
  const next = el("button", { type: "button", text: "Next solutions" });
  cancel.addEventListener("click", async () => {
    try { await api("POST", "jobs/" + encodeURIComponent(id) + "/cancel"); } catch (e) { showError(e.message); }
  });
  remove.addEventListener("click", async () => {
    try { await api("DELETE", "jobs/" + encodeURIComponent(id)); location.hash = "#jobs"; } catch (e) { showError(e.message); }
  });
  previous.addEventListener("click", () => { offset = Math.max(0, offset - pageSize); });
  next.addEventListener("click", () => { offset += pageSize; });
  const trace = el("div", { id: "job-trace-box" });
  const samples = [];
  main.append(el("h2", { text: "Job " + id }), el("div", { class: "toolbar" }, cancel, remove), stats,
    el("h3", { text: "Progress over time" }), trace,
    el("h3", { text: "Kept solutions" }), el("div", { class: "toolbar" }, previous, next), solutions);
  poll(async () => {
    const answer = await api("GET", "jobs/" + encodeURIComponent(id) + "?offset=" + offset + "&size=" + pageSize);
    const job = answer.job;
    const rows = [["State", job.state], ["Kind", job.kind], ["Durable", String(job.durable)],
      ["Tree done", (100 * job.progress.fraction_done).toFixed(3) + "%"], ["ETA", seconds(job.progress.eta_seconds)],
      ["Elapsed", seconds(job.progress.elapsed_seconds)], ["Nodes", number(job.progress.nodes)],
      ["Nodes/s", number(job.progress.nodes_per_second)], ["Solutions", number(job.summary ? job.summary.solutions : job.progress.solutions)],
      ["Tasks queued / running / done", job.progress.tasks_queued + " / " + job.progress.tasks_running + " / " + job.progress.tasks_done],
      ["Workers busy / total", job.progress.workers_busy + " / " + job.progress.workers_total],
      ["Created", when(job.create_time)], ["Ended", when(job.end_time)],
      ["End reason", job.summary ? job.summary.reason : ""], ["Error", job.summary ? job.summary.error : ""]];
    stats.replaceChildren(...rows.flatMap(([k, v]) => [el("dt", { text: k }), el("dd", { "data-stat": k, text: v })]));
    cancel.disabled = !["QUEUED", "RUNNING"].includes(job.state);
    const solved = job.summary ? job.summary.solutions : job.progress.solutions;
    const last = samples[samples.length - 1];
    if (!last || job.progress.elapsed_seconds > last.t) {
      const done = job.state === "SUCCEEDED" && job.summary && job.summary.exhausted;
      samples.push({ t: job.progress.elapsed_seconds, fraction: done ? 1 : job.progress.fraction_done, solutions: solved });
      if (samples.length > 600) samples.shift();
    }
    trace.replaceChildren(traceChart(samples));
    solutions.setAttribute("start", String(answer.offset + 1));
    solutions.replaceChildren(...answer.solutions.map(solutionItem));
  });
}

// A kept solution: its text, and its picture if it is a puzzle's.
function solutionItem(solution) {
  const item = el("li", {}, el("pre", { text: solution.grid || solution.options.join("\n") }));
  if (solution.svg) item.append(picture(solution.svg, "solution"));
  return item;
}

function picture(svgText, alt) {
  return el("img", { alt, src: "data:image/svg+xml;charset=utf-8," + encodeURIComponent(svgText) });
}

function workersView(main) {
  const body = el("tbody");
  main.append(el("h2", { text: "Workers" }),
    el("table", { id: "workers-table" },
      el("thead", {}, el("tr", {}, ...["Id", "Name", "Address", "Slots", "Leases", "Nodes", "Nodes/s",
        "Last heartbeat", "Rejected reports"].map(h => el("th", { text: h })))),
      body));
  poll(async () => {
    const answer = await api("GET", "workers");
    const now = Date.now() / 1000;
    body.replaceChildren(...answer.workers.map(w => el("tr", { "data-worker": w.name },
      el("td", { text: w.id }), el("td", { class: "name", text: w.name }), el("td", { text: w.address }),
      el("td", { text: String(w.slots) }), el("td", { text: String(w.leases) }), el("td", { text: number(w.nodes) }),
      el("td", { text: number(w.nodes_per_second) }),
      el("td", { text: Math.max(0, now - w.last_heartbeat_time).toFixed(1) + " s ago" }),
      el("td", { text: String(w.rejected_reports) }))));
  });
}

const SAMPLES = {
  sudoku: ".......1.4.........2...........5.4.7..8...3....1.9....3..4..2...5.1........8.6...",
  queens: "8",
  latin: "4",
  futoshiki: "3 .<. .\n      ^\n. .>1 .\nv\n. 2 . .\n. . . .",
  hidato: "1 . 3 #\n. 7 . .\n# . . 10",
  hitori: "1 4 2 2\n4 4 1 2\n2 1 3 4\n3 1 4 2",
  slitherlink: "..3\n121\n.2.",
};

function puzzleView(main) {
  const kind = el("select", { id: "puzzle-kind" });
  for (const k of Object.keys(SAMPLES)) kind.append(el("option", { value: k, text: k }));
  const text = el("textarea", { id: "puzzle-text", spellcheck: "false" });
  text.value = SAMPLES.sudoku;
  kind.addEventListener("change", () => { text.value = SAMPLES[kind.value]; });
  const solve = el("button", { id: "solve-button", type: "button", text: "Solve" });
  const limit = el("input", { id: "enumerate-limit", type: "number", min: "0", value: "20", size: "6" });
  const enumerate = el("button", { id: "enumerate-button", type: "button", text: "Enumerate" });
  const echo = el("pre", { id: "puzzle-echo" });
  const result = el("pre", { id: "puzzle-solution" });
  const status = el("p", { id: "puzzle-status" });
  const picturebox = el("div", { class: "picture", id: "puzzle-picture" });
  const found = el("ol", { id: "puzzle-solutions", class: "picture" });
  const started = () => {
    clearInterval(timer);
    echo.textContent = text.value;
    result.textContent = "";
    picturebox.replaceChildren();
    found.replaceChildren();
  };
  solve.addEventListener("click", async () => {
    started();
    status.textContent = "solving…";
    try {
      const answer = await api("POST", "puzzles/solve", { kind: kind.value, text: text.value });
      if (!answer.solution) { status.textContent = "no solution"; return; }
      status.textContent = "solved";
      result.textContent = answer.solution;
      picturebox.append(picture(answer.svg, kind.value + " solution"));
    } catch (e) {
      status.textContent = "refused: " + e.message;
    }
  });
  // An enumeration is a job: the page polls it and draws each solution
  // kept as it arrives, with the job's progress.
  enumerate.addEventListener("click", async () => {
    started();
    status.textContent = "starting…";
    let job;
    try {
      job = (await api("POST", "jobs", { kind: kind.value, text: text.value, limit: Number(limit.value) || 0 })).job;
    } catch (e) {
      status.textContent = "refused: " + e.message;
      return;
    }
    const link = el("a", { id: "puzzle-job", href: "#job/" + encodeURIComponent(job.id), text: "job " + job.id });
    poll(async () => {
      const answer = await api("GET", "jobs/" + encodeURIComponent(job.id) + "?offset=" + found.children.length + "&size=50");
      for (const s of answer.solutions) found.append(solutionItem(s));
      const now = answer.job;
      const live = ["QUEUED", "RUNNING"].includes(now.state);
      const count = now.summary ? now.summary.solutions : now.progress.solutions;
      status.replaceChildren((live ? "enumerating" : now.state.toLowerCase()) + ": " + number(count) +
        " solutions, " + (100 * (live ? now.progress.fraction_done : 1)).toFixed(1) + "% of the tree, " +
        found.children.length + " drawn · ", link);
      if (!live && answer.solutions.length === 0) clearInterval(timer);
    });
  });
  main.append(el("h2", { text: "Puzzle" }),
    el("div", { class: "toolbar" }, el("label", { text: "Kind " }, kind), solve,
      el("label", { text: "Enumerate up to (0: all) " }, limit), enumerate),
    text, el("h3", { text: "Puzzle as given" }), echo, status, result, picturebox, found);
}

function route() {
  clearInterval(timer);
  showError("");
  const main = document.getElementById("main");
  main.replaceChildren();
  const hash = decodeURIComponent(location.hash.slice(1));
  if (hash.startsWith("job/")) jobView(main, hash.slice(4));
  else if (hash === "workers") workersView(main);
  else if (hash === "puzzle") puzzleView(main);
  else jobsView(main);
}

document.addEventListener("DOMContentLoaded", () => {
  const form = document.getElementById("key-form");
  const forget = document.getElementById("key-forget");
  forget.hidden = !sessionStorage.getItem(KEY);
  form.addEventListener("submit", e => {
    e.preventDefault();
    const input = document.getElementById("key-input");
    sessionStorage.setItem(KEY, input.value.trim());
    input.value = "";
    form.hidden = true;
    forget.hidden = false;
    route();
  });
  forget.addEventListener("click", () => { sessionStorage.removeItem(KEY); forget.hidden = true; route(); });
  window.addEventListener("hashchange", route);
  route();
});
