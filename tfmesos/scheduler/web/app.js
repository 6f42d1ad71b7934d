// The tfmesos status page: polls the scheduler's /v1/status and a chosen task's /v1/logs.
// Plain JavaScript, no build step and nothing fetched from elsewhere.
"use strict";

const POLL_MS = 1000;
// The /v1/status version this page reads (tfmesos.core.status.VERSION; a test keeps them equal, and
// keeps every field read here one of StatusSnapshot's).
const STATUS_VERSION = 1;
const LOG_KEEP_CHARS = 200000;  // the page keeps the end of a long log, not all of it
let chosen = null;              // "role:index" whose log is shown
let log = null;                 // {task, file, attempt, offset}
let lastSnap = null;

const $ = (id) => document.getElementById(id);

function duration(seconds) {
  if (seconds == null || !isFinite(seconds)) return "-";
  const s = Math.max(0, Math.floor(seconds));
  const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), r = s % 60;
  return (h ? h + "h " : "") + (h || m ? m + "m " : "") + r + "s";
}

function number(v) {
  return typeof v === "number" && !Number.isInteger(v) ? v.toPrecision(4) : String(v);
}

// Opened as http://HOST:PORT/#token=TOKEN (the job's API token: needed to kill and restart, and with
// service.api_token_reads to read), the token stays in the browser (a fragment is never sent) and
// goes out only as a header. Without it the page shows no kill or restart, and says how to get it.
const TOKEN = new URLSearchParams(location.hash.slice(1)).get("token");

async function act(path, question) {
  if (!window.confirm(question)) return;
  const result = $("action-result");
  try {
    const resp = await fetch(path, {method: "POST", cache: "no-store", headers: {"Authorization": "Bearer " + TOKEN}});
    const body = await resp.json();
    if (!resp.ok) throw new Error(body.error || resp.status);
    result.textContent = body.restarting || "the job is being stopped";
  } catch (err) {
    result.textContent = "refused: " + err.message;
  }
}

async function getJSON(url) {
  const headers = TOKEN ? {"Authorization": "Bearer " + TOKEN} : {};
  const resp = await fetch(url, {cache: "no-store", headers});
  const body = await resp.json();
  if (!resp.ok) throw new Error(body.error || resp.status);
  return body;
}

function cell(row, text, cls) {
  const td = row.insertCell();
  td.textContent = text;
  if (cls) td.className = cls;
  return td;
}

function link(parent, href, text) {
  const a = document.createElement("a");
  a.href = href;
  a.textContent = text;
  a.target = "_blank";
  parent.appendChild(a);
  return a;
}

function progressText(p) {
  const parts = [];
  if (p.step != null) parts.push("step " + p.step + (p.total_steps ? " / " + p.total_steps : ""));
  if (p.fraction != null) parts.push(Math.round(p.fraction * 100) + "%");
  for (const [k, v] of Object.entries(p)) {
    if (!["step", "total_steps", "fraction", "at"].includes(k)) parts.push(k + " " + number(v));
  }
  return parts.join(" · ");
}

function renderTasks(snap) {
  const body = $("tasks").tBodies[0];
  const rows = new Map([...body.rows].map((r) => [r.dataset.task, r]));
  snap.tasks.forEach((t, i) => {
    const name = t.role + ":" + t.index;
    let row = rows.get(name);
    rows.delete(name);
    const fresh = document.createElement("tr");
    fresh.dataset.task = name;
    cell(fresh, name, "name");
    cell(fresh, t.endpoint || "-", "endpoint");
    const agent = cell(fresh, "", "agent");
    if (t.agent_id && snap.master && t.task_id) {
      link(agent, `http://${snap.master}/#/agents/${t.agent_id}/frameworks/${snap.framework_id}/executors/${t.task_id}`,
           t.agent_id.replace(/^.*-(S\d+)$/, "$1")).title = "the task's sandbox in the Mesos UI";
    } else {
      agent.textContent = t.agent_id || "-";
    }
    cell(fresh, t.state, "state " + t.state);
    cell(fresh, t.restarts + (t.requested_restarts ? ` (+${t.requested_restarts} asked)` : "")
      + (t.planned_stops ? ` (+${t.planned_stops} planned)` : ""), "restarts");
    const exit = t.exit_code == null ? "" : "exit " + t.exit_code;
    // The exception that ended it says why (a Python traceback's last line); the message says how.
    cell(fresh, [exit, t.reason, t.exception].filter(Boolean).join(", ") || "-", "exit").title = t.message || "";
    cell(fresh, t.progress && t.progress.step != null ? String(t.progress.step) : "-", "step");
    const button = document.createElement("button");
    button.textContent = "log";
    button.className = "show-log";
    button.onclick = () => choose(name);
    const actions = fresh.insertCell();
    actions.appendChild(button);
    if (TOKEN && !snap.ended_at) {
      const restart = document.createElement("button");
      restart.textContent = "restart";
      restart.className = "restart-task";
      restart.onclick = () => act(`v1/restart/${encodeURIComponent(name)}`, `Restart ${name}? Its process is killed and relaunched.`);
      actions.appendChild(restart);
    }
    if (name === chosen) fresh.classList.add("chosen");
    if (!row) {
      body.insertBefore(fresh, body.rows[i] || null);
    } else if (row.innerHTML !== fresh.innerHTML || row.className !== fresh.className) {
      row.replaceWith(fresh);
    }
  });
  rows.forEach((r) => r.remove());
}

function render(snap) {
  lastSnap = snap;
  // Queued: the job fits the cluster but waits for room (the API keeps PLACING; `tfmesos status` and
  // `tfmesos jobs` say QUEUED too: api/status_text.py's phase_text).
  const phase = snap.queued ? "QUEUED" : snap.phase;
  document.title = `${snap.name} ${phase} · tfmesos`;
  $("job-name").textContent = snap.name;
  $("phase").textContent = phase;
  $("phase").className = "phase " + snap.phase;
  // A job that ended (served with --keep-serving) stops its clock at its end.
  $("elapsed").textContent = duration((snap.ended_at || snap.now) - snap.started_at);
  $("mode").textContent = snap.mode;
  $("job-restarts").textContent = snap.job_restarts;
  $("framework").textContent = snap.framework_id || "-";
  $("cause").hidden = !snap.cause;
  $("cause").textContent = snap.cause || "";
  $("kill-job").hidden = !TOKEN || Boolean(snap.ended_at);
  $("token-note").hidden = Boolean(TOKEN);
  $("kill-command").textContent = `tfmesos kill ${snap.name}`;
  $("restart-command").textContent = `tfmesos restart ${snap.name} ROLE:INDEX`;
  $("token-file").textContent = `live/${snap.name.replaceAll("/", "__")}.token`;
  // The figures say what holds a queued job.
  $("queued").hidden = !snap.queued;
  $("queued").textContent = snap.queued
    ? `${snap.queued} (for ${duration(snap.now - snap.queued_since)})` : "";
  const links = $("links");
  links.textContent = "";
  if (snap.tensorboard) link(links, `http://${snap.tensorboard}/`, "TensorBoard").id = "tensorboard-link";
  if (snap.master) link(links, `http://${snap.master}/`, "Mesos");
  const p = snap.progress;
  $("progress-box").hidden = !p;
  if (p) {
    $("progress-fill").style.width = p.fraction != null ? (p.fraction * 100).toFixed(1) + "%" : "0";
    $("progress-text").textContent = progressText(p);
  }
  renderCharts(snap);
  renderTasks(snap);
  const events = $("events");
  const items = snap.events.slice().reverse();
  if (events.dataset.shown !== JSON.stringify(items)) {
    events.dataset.shown = JSON.stringify(items);
    events.textContent = "";
    for (const e of items) events.appendChild(document.createElement("li")).textContent = e;
  }
}

// ---- the training charts: the chief's reports over time (snap.series: [[at, step, loss], ...],
// already bounded by the scheduler), drawn as inline SVG.
const SVG_NS = "http://www.w3.org/2000/svg";
const CHART = {w: 600, h: 170, left: 52, right: 10, top: 10, bottom: 24};

function svgEl(parent, name, attrs, text) {
  const el = document.createElementNS(SVG_NS, name);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  if (text != null) el.textContent = text;
  parent.appendChild(el);
  return el;
}

// An axis label that fits the chart's left margin: 3 digits, or an exponent for the very small or large.
function axisNumber(v) {
  const a = Math.abs(v);
  return a !== 0 && (a < 0.01 || a >= 100000) ? v.toExponential(1) : String(Number(v.toPrecision(3)));
}

// pts: [[seconds since the start, value], ...]; fromZero: the y axis starts at 0 (rates).
function drawChart(svg, pts, fromZero) {
  const key = JSON.stringify(pts.length ? [pts.length, pts[pts.length - 1]] : []);
  if (svg.dataset.key === key) return;
  svg.dataset.key = key;
  svg.textContent = "";
  const c = CHART, iw = c.w - c.left - c.right, ih = c.h - c.top - c.bottom;
  svgEl(svg, "line", {class: "axis", x1: c.left, y1: c.top + ih, x2: c.left + iw, y2: c.top + ih});
  svgEl(svg, "line", {class: "axis", x1: c.left, y1: c.top, x2: c.left, y2: c.top + ih});
  if (!pts.length) {
    svgEl(svg, "text", {x: c.left + 8, y: c.top + ih / 2}, "no reports yet");
    return;
  }
  const xs = pts.map((p) => p[0]), ys = pts.map((p) => p[1]);
  const x0 = Math.min(...xs), x1 = Math.max(...xs, x0 + 1);
  let y0 = fromZero ? 0 : Math.min(...ys), y1 = Math.max(...ys);
  if (y1 - y0 < 1e-12) { y1 += Math.abs(y1) * 0.1 || 1; y0 = fromZero ? 0 : y0 - (Math.abs(y0) * 0.1 || 1); }
  const X = (x) => c.left + (x - x0) / (x1 - x0) * iw, Y = (y) => c.top + ih - (y - y0) / (y1 - y0) * ih;
  svgEl(svg, "text", {x: c.left - 4, y: c.top + 9, "text-anchor": "end"}, axisNumber(y1));
  svgEl(svg, "text", {x: c.left - 4, y: c.top + ih, "text-anchor": "end"}, axisNumber(y0));
  svgEl(svg, "text", {x: c.left, y: c.h - 6}, duration(x0));
  svgEl(svg, "text", {x: c.left + iw, y: c.h - 6, "text-anchor": "end"}, duration(x1));
  svgEl(svg, "polyline", {class: "line", points: pts.map((p) => X(p[0]).toFixed(1) + "," + Y(p[1]).toFixed(1)).join(" ")});
  for (const p of pts) svgEl(svg, "circle", {class: "pt", cx: X(p[0]).toFixed(1), cy: Y(p[1]).toFixed(1), r: 2});
}

function renderCharts(snap) {
  const series = snap.series || [];
  $("chart-box").hidden = !series.length;
  if (!series.length) return;
  const t0 = snap.started_at;
  const loss = series.filter((p) => p[2] != null).map((p) => [p[0] - t0, p[2]]);
  // Steps/s between consecutive kept points: the mean over each stretch; none where no step was
  // made (a report after training, e.g. its accuracy) or the step went back (a restart from a checkpoint).
  const rate = [];
  for (let i = 1; i < series.length; i++) {
    const [ta, sa] = series[i - 1], [tb, sb] = series[i];
    if (tb > ta && sb > sa) rate.push([tb - t0, (sb - sa) / (tb - ta)]);
  }
  drawChart($("chart-loss"), loss, false);
  drawChart($("chart-rate"), rate, true);
  $("chart-note").textContent = `${series.length} reports of step ${number(series[series.length - 1][1])}` +
    (snap.ended_at ? " · the job has ended" : "");
}

function choose(task) {
  chosen = task;
  log = null;
  $("log-task").textContent = task;
  if (lastSnap) renderTasks(lastSnap);
  pollLog();
}

function append(text) {
  const pre = $("log");
  const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
  let all = pre.textContent + text;
  if (all.length > LOG_KEEP_CHARS) all = all.slice(all.length - LOG_KEEP_CHARS);
  pre.textContent = all;
  if (atEnd) pre.scrollTop = pre.scrollHeight;
}

let logTimer = null;
async function pollLog() {
  clearTimeout(logTimer);
  let again = POLL_MS;
  if (chosen) {
    const file = $("log-file").value;
    const task = chosen;
    let query;
    if (!log || log.task !== task || log.file !== file) {
      log = {task, file, attempt: null, offset: null};
      $("log").textContent = "";
      query = "tail=200";
    } else {
      query = `attempt=${encodeURIComponent(log.attempt)}&offset=${log.offset}`;
    }
    try {
      const c = await getJSON(`v1/logs/${encodeURIComponent(task)}?file=${file}&${query}`);
      if (log && log.task === task && log.file === file) {
        append(c.data);
        log.attempt = c.task_id;
        log.offset = c.next_offset;
        if (c.next_offset < c.size) {
          again = 0;
        } else if (!c.latest) {
          const newer = c.attempts[c.attempts.indexOf(c.task_id) + 1];
          append(`--- ${task} relaunched as ${newer} ---\n`);
          log.attempt = newer;
          log.offset = 0;
          again = 0;
        }
      }
    } catch (err) {
      if (log && log.offset == null) $("log").textContent = `(${err.message})`;
      log = log && log.offset == null ? null : log;
    }
  }
  logTimer = setTimeout(pollLog, again);
}

async function pollStatus() {
  const stale = $("stale");
  try {
    const snap = await getJSON("v1/status");
    if (snap.version > STATUS_VERSION) {  // the scheduler was upgraded under an open page
      stale.textContent = `the scheduler now serves status version ${snap.version}: reload the page`;
    } else {
      render(snap);
    }
    stale.hidden = !(snap.version > STATUS_VERSION);
  } catch (err) {
    stale.textContent = "the scheduler does not answer; showing its last status";
    stale.hidden = false;
  }
  setTimeout(pollStatus, POLL_MS);
}

$("log-file").onchange = () => { log = null; pollLog(); };
$("kill-job").onclick = () => act("v1/shutdown", "Kill the job? Every task is killed and the framework torn down.");
pollStatus();
const wanted = new URLSearchParams(location.search).get("task");
if (wanted) choose(wanted);
