// The tfmesos status page: polls the scheduler's /v1/status and a chosen task's /v1/logs.
// Plain JavaScript, no build step and nothing fetched from elsewhere.
"use strict";

const POLL_MS = 1000;
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

// With service.api_token_reads the page is opened as http://HOST:PORT/#token=TOKEN: the token
// stays in the browser (a fragment is never sent) and goes out only as a header.
const TOKEN = new URLSearchParams(location.hash.slice(1)).get("token");

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
    cell(fresh, t.restarts + (t.requested_restarts ? ` (+${t.requested_restarts} asked)` : ""), "restarts");
    const exit = t.exit_code == null ? "" : "exit " + t.exit_code;
    cell(fresh, [exit, t.reason].filter(Boolean).join(", ") || "-", "exit").title = t.message || "";
    cell(fresh, t.progress && t.progress.step != null ? String(t.progress.step) : "-", "step");
    const button = document.createElement("button");
    button.textContent = "log";
    button.className = "show-log";
    button.onclick = () => choose(name);
    fresh.insertCell().appendChild(button);
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
  document.title = `${snap.name} ${snap.phase} · tfmesos`;
  $("job-name").textContent = snap.name;
  $("phase").textContent = snap.phase;
  $("phase").className = "phase " + snap.phase;
  $("elapsed").textContent = duration(snap.now - snap.started_at);
  $("mode").textContent = snap.mode;
  $("job-restarts").textContent = snap.job_restarts;
  $("framework").textContent = snap.framework_id || "-";
  $("cause").hidden = !snap.cause;
  $("cause").textContent = snap.cause || "";
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
  renderTasks(snap);
  const events = $("events");
  const items = snap.events.slice().reverse();
  if (events.dataset.shown !== JSON.stringify(items)) {
    events.dataset.shown = JSON.stringify(items);
    events.textContent = "";
    for (const e of items) events.appendChild(document.createElement("li")).textContent = e;
  }
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
  try {
    render(await getJSON("v1/status"));
    $("stale").hidden = true;
  } catch (err) {
    $("stale").hidden = false;
  }
  setTimeout(pollStatus, POLL_MS);
}

$("log-file").onchange = () => { log = null; pollLog(); };
pollStatus();
const wanted = new URLSearchParams(location.search).get("task");
if (wanted) choose(wanted);
