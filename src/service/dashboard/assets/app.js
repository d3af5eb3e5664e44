// The xccd dashboard: hash routes (#jobs, #job/ID, #workers, #puzzle) over
// the JSON API under /api/. Every value from the server or the user is put
// in the page with textContent (never as markup); a puzzle's SVG picture is
// an <img> of a data: URL, where no script runs.
"use strict";

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
  const key = localStorage.getItem(KEY);
  if (key) headers["authorization"] = "Bearer " + key;
  if (body !== undefined) headers["content-type"] = "application/json";
  const response = await fetch("/api/" + path, {
    method, headers, body: body === undefined ? undefined : JSON.stringify(body),
  });
  const answer = await response.json();
  if (response.status === 401) {
    document.getElementById("key-form").hidden = false;
    throw new Error("this server takes API keys: enter yours above (" + answer.message + ")");
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
  main.append(
    el("h2", { text: "Jobs" }),
    el("div", { class: "toolbar" }, el("label", { text: "State " }, filter)),
    el("table", { id: "jobs-table" },
      el("thead", {}, el("tr", {}, ...["Job", "State", "Kind", "Progress (tree)", "ETA", "Nodes", "Nodes/s",
        "Solutions", "End reason"].map(h => el("th", { text: h })))),
      body));
  poll(async () => {
    const state = filter.value;
    const answer = await api("GET", "jobs" + (state ? "?state=" + encodeURIComponent(state) : ""));
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
  main.append(el("h2", { text: "Job " + id }), el("div", { class: "toolbar" }, cancel, remove), stats,
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
    solutions.setAttribute("start", String(answer.offset + 1));
    solutions.replaceChildren(...answer.solutions.map(s => el("li", {}, el("pre", { text: s.grid || s.options.join("\n") }))));
  });
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
  const echo = el("pre", { id: "puzzle-echo" });
  const result = el("pre", { id: "puzzle-solution" });
  const status = el("p", { id: "puzzle-status" });
  const picture = el("div", { class: "picture", id: "puzzle-picture" });
  solve.addEventListener("click", async () => {
    echo.textContent = text.value;
    result.textContent = "";
    picture.replaceChildren();
    status.textContent = "solving…";
    try {
      const answer = await api("POST", "puzzles/solve", { kind: kind.value, text: text.value });
      if (!answer.solution) { status.textContent = "no solution"; return; }
      status.textContent = "solved";
      result.textContent = answer.solution;
      picture.append(el("img", { alt: kind.value + " solution",
        src: "data:image/svg+xml;charset=utf-8," + encodeURIComponent(answer.svg) }));
    } catch (e) {
      status.textContent = "refused: " + e.message;
    }
  });
  main.append(el("h2", { text: "Puzzle" }),
    el("div", { class: "toolbar" }, el("label", { text: "Kind " }, kind), solve),
    text, el("h3", { text: "Puzzle as given" }), echo, status, result, picture);
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
  forget.hidden = !localStorage.getItem(KEY);
  form.addEventListener("submit", e => {
    e.preventDefault();
    localStorage.setItem(KEY, document.getElementById("key-input").value);
    form.hidden = true;
    forget.hidden = false;
    route();
  });
  forget.addEventListener("click", () => { localStorage.removeItem(KEY); forget.hidden = true; route(); });
  window.addEventListener("hashchange", route);
  route();
});
