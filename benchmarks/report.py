"""Render ``results.json`` as ``RESULTS.md`` and judge each figure against the project's bars.

Bars (from the benchmark issues 1 and 12): bring-up ratio at most 1.3; training at least 0.99x;
a worker's recovery at most TF start + 3 s (the whole-job restart after a parameter server loss:
at most the hand-launched job's bring-up + 3 s, since all four TensorFlow processes start again
on the same 2 cores); placement and the scheduler's work linear in agents and tasks; a 100-task
gang RUNNING within 1.5 s of SUBSCRIBED and a 1,000-task one within 10 s; tfmesos' own processes
at most 3% of a `make run` job's CPU; an executor at TASK_RUNNING within 50 ms of its start and
idle afterwards; 10,000 agents in one master under 300 MiB, offered within 1 s.
"""
from __future__ import annotations

import math
from typing import Any

BRINGUP_MAX_RATIO = 1.3
TRAINING_MIN_RATIO = 0.99
GANG_BARS_S = {100: 1.5, 1000: 10.0}  # all TASK_RUNNING, seconds from SUBSCRIBED
CPU_SHARE_MAX = 0.03
EXECUTOR_START_MAX_S = 0.05
EXECUTOR_COLD_CPU_MAX_MS = 60.0  # a cold executor's CPU from exec to SUBSCRIBE (issue 20)
EXECUTOR_STEADY_MAX = 0.001  # fraction of one core: "~0", no polling loop
MASTER_AGENTS, MASTER_RSS_MAX_MIB, MASTER_OFFER_MAX_S = 10000, 300.0, 1.0
RECOVERY_SLACK_S = 3.0
LINEAR_MAX_GROWTH = 12.0  # per 10x: 10 is linear; noise and fixed costs keep it below
SCALE_MAX_PER_TASK_GROWTH = 1.5  # CPU per task, largest job vs smallest, same agents


def _marginal_cpu(configs: list[dict[str, Any]]) -> list[tuple[int, int, float]]:
    """(tasks a, tasks b, scheduler CPU ms per task added from a to b) along the job sizes run."""
    points = sorted((c["tasks"], _med(c["scheduler_cpu_s"])) for c in configs if _med(c["scheduler_cpu_s"]) is not None)
    return [(a, b, (cb - ca) / (b - a) * 1e3) for (a, ca), (b, cb) in zip(points, points[1:]) if b > a]


def _f(x: Any, digits: int = 2, unit: str = "") -> str:
    if x is None:
        return "n/a"
    return f"{x:.{digits}f}{unit}"


def _med(d: dict[str, Any] | None) -> float | None:
    return None if not d else d.get("median")


def _n(d: dict[str, Any] | None) -> int:
    return 0 if not d else d.get("n", 0)


def _taskinfo_bytes(result: dict[str, Any] | None, verdicts: dict[str, Any]) -> list[str]:
    """A gang's TaskInfo bytes (benchmarks/taskinfo_bytes.py): linear, 1,000 workers under the bar."""
    if not result:
        return []
    from benchmarks.taskinfo_bytes import table

    big = next((r for r in result["this"] if r["workers"] == 1000), None)
    if big is not None:
        verdicts["taskinfo_bytes_1000"] = {"ok": big["taskinfo_bytes"] < result["bar_1000_bytes"],
                                           "value": big["taskinfo_bytes"], "bar": f"< {result['bar_1000_bytes']:,} B"}
    return ["## A gang's TaskInfo bytes (`tfmesos run --dry-run --output json`, 2 ps and N workers)", "",
            *table(result), ""]


def _busy(busy: dict[str, Any] | None, verdicts: dict[str, Any]) -> list[str]:
    """A busy cluster (benchmarks/busy.py): every job SUCCEEDED; the makespan against the ideal queue."""
    if not busy:
        return []
    out = ["## A busy cluster: jobs submitted at once against the ideal queue (2 agents of 1 cpu)", "",
           "| scenario | SUCCEEDED | said queued | makespan (s) | ideal queue (s) | ratio | one after another (s) "
           "| wait median / max (s) | launch order |", "|---|---|---|---|---|---|---|---|---|"]
    for name, r in busy.items():
        verdicts[f"busy_{name}"] = {"ok": r["succeeded"] == r["count"], "value": r["ratio_to_ideal"],
                                    "bar": "every job SUCCEEDED"}
        order = ", ".join(n.rsplit("-", 1)[-1] if n.startswith("busy-four") or n.startswith("busy-small") else n
                          for n in r["launch_order"])
        out.append(f"| {name} | {r['succeeded']}/{r['count']} | {r['queued_said']} | {_f(r['makespan_s'], 1)} | "
                   f"{_f(r['ideal_queue_s'], 1)} | {_f(r['ratio_to_ideal'])} | {_f(r['one_after_another_s'], 1)} | "
                   f"{_f(r['wait_s'].get('median'), 1)} / {_f(r['wait_s'].get('max'), 1)} | {order} |")
    return out + [""]


REAL_GANG_MAX_S, REAL_GANG_MAX_FLOOR_RATIO = 5.0, 1.2  # issue 30: <= 5 s, or within 1.2x of the agents' floor


def _drain(dr: dict[str, Any] | None, verdicts: dict[str, Any]) -> list[str]:
    """A drained agent against kill -9 of the same task (benchmarks/drain.py): the bar, 0 steps lost per drain."""
    if not dr:
        return []
    out = [f"## An agent drained against kill -9 of {dr['leaving']} (embedded master, max_restarts 0 for the drain)", "",
           "| mode | drain: steps lost | drain: s to resumed | kill -9: steps lost | kill -9: s to resumed | verdict |",
           "|---|---|---|---|---|---|"]
    for mode, per in dr["modes"].items():
        d, k = per["drain"], per["kill9"]
        lost = d["median_steps_lost"]
        v = _verdict(verdicts, f"drain_{mode}_steps_lost", lost, lost == 0, "0 steps lost per drain")
        out.append(f"| {mode} | {lost} | {_f(d['median_to_resumed_s'])} | {k['median_steps_lost']} | "
                   f"{_f(k['median_to_resumed_s'])} | {v} |")
    return out + [""]


def _real_gang(rg: dict[str, Any] | None, verdicts: dict[str, Any]) -> list[str]:
    """The 100-task gang on three real Mesos agents (benchmarks/real_gang.py): the arms, the bar, the profile."""
    if not rg:
        return []
    title = "## The 100-task gang on three real Mesos agents (seconds from SUBSCRIBED to the 100th TASK_RUNNING)"
    if rg.get("skipped"):
        return [title, "", f"Skipped: {rg['skipped']}.", ""]
    med, ratios = rg["median_s"], rg.get("median_ratio_to_floor", {})
    t, ratio = med.get("tfmesos"), ratios.get("tfmesos")
    ok = None if t is None else (t <= REAL_GANG_MAX_S or (ratio is not None and ratio <= REAL_GANG_MAX_FLOOR_RATIO))
    v = _verdict(verdicts, "real_gang_100", t, ok, f"<= {REAL_GANG_MAX_S:g} s or <= {REAL_GANG_MAX_FLOOR_RATIO:g}x the floor")
    loads = [s.get("load_average") for rows in rg["samples"].values() for s in rows if s.get("load_average") is not None]
    out = [title, "", "| arm | median s | median ratio to the floor (per round) | CPU s to all RUNNING: master / agents / "
           "executors and tasks | verdict |", "|---|---|---|---|---|"]
    for arm, seconds in med.items():
        cpu = (rg.get("median_cpu_to_all_running_s") or {}).get(arm) or {}
        cpu_text = " / ".join(_f(cpu.get(k), 1) for k in ("master", "agents", "executors_and_tasks"))
        out.append(f"| {arm} | {_f(seconds)} | {_f(ratios.get(arm)) if arm != 'floor' else '1'} | {cpu_text} | "
                   f"{v if arm == 'tfmesos' else ''} |")
    out += ["", f"{len(next(iter(rg['samples'].values())))} rounds, a fresh cluster each, arms interleaved; "
            f"load average {min(loads, default=0):.1f}-{max(loads, default=0):.1f} at the arms' starts.", "",
            "Profile (medians over the rounds): when the last task passed each phase, seconds after the master's "
            "SUBSCRIBE, and the median and largest per-task step from the phase before.", "",
            "| phase | " + " | ".join(rg["profile"]) + " |", "|---|" + "---|" * len(rg["profile"])]
    phases = list(dict.fromkeys(row["phase"] for rows in rg["profile"].values() for row in rows))
    for phase in phases:
        cells = []
        for rows in rg["profile"].values():
            row = next((r for r in rows if r["phase"] == phase), None)
            cells.append("" if row is None else _f(row.get("last_s")) + (
                f" (step {_f(row['median_step_s'])}, max {_f(row.get('max_step_s'))})" if "median_step_s" in row else ""))
        out.append(f"| {phase} | " + " | ".join(cells) + " |")
    return out + [""]


def _real_gang_big(big: dict[str, Any] | None) -> list[str]:
    """The 1,000-task gang on three real agents (``real_gang big``, one arm per run): each arm's
    figures, or what stopped it."""
    if not big:
        return []
    out = ["## The 1,000-task gang on three real Mesos agents (`python -m benchmarks.real_gang big ARM`)", "",
           "| arm | run | registration -> 1,000th TASK_RUNNING (s) | or what stopped it | load at start | peak RSS MiB: "
           "master / agents | executors' median USS MiB | least available MiB |", "|---|---|---|---|---|---|---|---|"]
    for run in big.get("runs", []):
        for arm, s in run.get("samples", {}).items():
            peak = s.get("peak_rss_mib") or {}
            agents = "/".join(_f(v, 0) for k, v in sorted(peak.items()) if k.startswith("agent"))
            uss = ((s.get("at_all_running") or {}).get("sandboxes") or {}).get("executor_median_uss_mib", s.get("executor_median_uss_mib"))
            stopped = s.get("stopped") or (s.get("error", "").split("\n")[0][:160] if s.get("error") else "")
            out.append(f"| {arm} | {run.get('when', '')} | {_f(s.get('seconds'), 1)} | {stopped} | {_f(s.get('load_average'), 1)} | "
                       f"{_f(peak.get('master'), 0)} / {agents} | {_f(uss)} | {s.get('min_available_mib', '')} |")
    return out + ["", big.get("note", ""), ""]


def _embedded_gang_now(runs: list[dict[str, Any]] | None) -> list[str]:
    """The embedded master's 1,000-task gang measured again under the machine's load of the day."""
    if not runs:
        return []
    out = ["The 1,000-task gang measured again (issue 40, `scale.one_run`, 1,000 agents; other sessions' tests running):", "",
           "| when | commit | master's work dir | load (1 min) | all TASK_RUNNING (s) | CPU s: executors and tasks / master / "
           "scheduler | their sum / 2 cores (s) | the executors' page faults each |", "|---|---|---|---|---|---|---|---|"]
    for r in runs:
        parts = [r.get(k) for k in ("executors_cpu_s", "master_cpu_s", "scheduler_cpu_s")]
        floor = sum(parts) / 2 if None not in parts else None  # type: ignore[arg-type]
        faults = (r.get("children") or {}).get("cminflt")
        out.append(f"| {r.get('when', '')} | {r.get('git_commit', '')} | {r.get('work_dir_fs', 'ext4 (/tmp)')} | "
                   f"{_f(r['load_average'][0], 1)} | {_f(r['all_running_s'], 1)} | {' / '.join(_f(x, 1) for x in parts)} | "
                   f"{_f(floor, 1)} | {faults // r['tasks'] if faults else ''} |")
    return out + [""]


def render(results: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    env = results["environment"]
    verdicts: dict[str, Any] = {}
    out = [
        "# tfmesos benchmark results",
        "",
        f"Generated by `python -m benchmarks.run` ({results['mode']} mode"
        f"{'; single samples, indicative only' if results['mode'] == 'quick' else ''}) on {env['date']}; "
        f"total {results.get('total_s', 0):.0f} s. How each figure is measured: `benchmarks/README.md`.",
        "",
        f"Machine: {env['cpu_count']} CPUs ({env['cpu_model']}), {env['mem_total_gib']} GiB; Python {env['python']}, "
        f"TensorFlow {env.get('tensorflow_version', '?')}, pymesos {env.get('pymesos_version', '?')}, "
        f"commit {env.get('git_commit', '?')}. Load average at start {env.get('load_average_at_start')}, "
        f"at end {env.get('load_average_at_end')} (a shared machine: every comparison is interleaved, "
        "and ratios are medians of per-pair ratios).",
        "",
    ]

    b = results.get("bringup")
    imp = _med(b["import_tensorflow_s"]) if b else None
    hand_first = _med(b["first_step_s"]["hand"]) if b else None
    if b:
        out += ["## Bring-up and training: tfmesos vs the same processes started by hand", "",
                "| figure | tfmesos (median) | by hand (median) | ratio (median of pairs) | bar | verdict |",
                "|---|---|---|---|---|---|"]
        rows = [
            ("all 3 TF servers serving (s)", "servers_up_s", 2, f"<= {BRINGUP_MAX_RATIO}", "bringup_servers", "le", BRINGUP_MAX_RATIO),
            ("chief's first training step (s)", "first_step_s", 2, f"<= {BRINGUP_MAX_RATIO}", "bringup_first_step", "le", BRINGUP_MAX_RATIO),
            ("CPU s of all job processes until the first step", "bringup_cpu_s", 1, "info", None, None, None),
            ("training speed (steps/s)", "steps_per_s", 1, f">= {TRAINING_MIN_RATIO}", "training", "ge", TRAINING_MIN_RATIO),
            ("CPU s of all job processes per 1000 steps", "training_cpu_s_per_1000_steps", 2, "info", None, None, None),
            ("other users' load during bring-up (cores of 2)", "foreign_cores_bringup", 2, "info", None, None, None),
            ("other users' load during training (cores of 2)", "foreign_cores_training", 2, "info", None, None, None),
        ]
        for label, key, digits, bar, vkey, op, limit in rows:
            m = b[key]
            ratio = None if key.startswith("foreign") else _med(m["pair_ratios"])
            verdict = ""
            if vkey and ratio is not None:
                ok = ratio <= limit if op == "le" else ratio >= limit
                verdict = "ok" if ok else "**POOR**"
                verdicts[vkey] = {"ratio": ratio, "bar": bar, "ok": ok}
            out.append(f"| {label} | {_f(_med(m['tfmesos']), digits)} | {_f(_med(m['hand']), digits)} | "
                       f"{_f(ratio, 3)} (n={_n(m['pair_ratios'])}) | {bar} | {verdict} |")
        tl = b.get("timeline_s", {})
        out += ["",
                f"`python -c \"import tensorflow\"` alone: **{_f(imp)} s** (median of {_n(b['import_tensorflow_s'])}). "
                f"tfmesos timeline (median s from `tfmesos run` start): registered {_f(_med(tl.get('registered')))}, "
                f"all launched {_f(_med(tl.get('all_launched')))}, all TASK_RUNNING (ClusterSpec delivered, processes started) "
                f"{_f(_med(tl.get('all_task_running')))}, servers serving {_f(_med(tl.get('servers_up')))}, "
                f"first step {_f(_med(tl.get('first_step')))}. Scheduler CPU for the whole job (embedded master included): "
                f"{_f(_med(b.get('scheduler_cpu_s')))} s. While training, tfmesos' own processes (scheduler, embedded master, "
                f"4 executors) used {_f(_med(b.get('tfmesos_processes_cpu_s_per_1000_steps')), 3)} CPU s per 1000 steps, "
                f"against {_f(_med(b['training_cpu_s_per_1000_steps']['tfmesos']))} for the whole job.",
                f"TRAIN_STEPS={results['settings']['bringup']['steps']}; failed runs (retried): {len(b.get('failures', []))}.", ""]

    out += _extra_sections(results, verdicts)

    r = results.get("recovery")
    if r and r.get("runs"):
        w, p = r["worker"], r["ps"]
        out += ["## Recovery (kill -9), seconds from the kill (median of runs)", "",
                "| killed | TASK_FAILED seen | relaunched | TASK_RUNNING (ClusterSpec delivered) | TF server(s) serving | training again | bar | verdict |",
                "|---|---|---|---|---|---|---|---|"]
        wbar = imp + RECOVERY_SLACK_S if imp is not None else None
        w_serv = _med(w["serving"])
        wv = ""
        if wbar is not None and w_serv is not None:
            ok = w_serv <= wbar
            wv = "ok" if ok else "**POOR**"
            verdicts["recovery_worker"] = {"serving_s": w_serv, "bar_s": wbar, "ok": ok}
        out.append(f"| worker:1 | {_f(_med(w['task_failed']))} | {_f(_med(w['relaunched']))} | {_f(_med(w['task_running']))} | "
                   f"{_f(w_serv)} | (the chief trains on with worker:0) | serving <= TF start + 3 = {_f(wbar)} | {wv} |")
        probe = _med(w.get("tfserver_by_hand_under_load"))
        lbar = probe + RECOVERY_SLACK_S if probe is not None else None
        if lbar is not None and w_serv is not None:
            ok = w_serv <= lbar
            verdicts["recovery_worker_vs_same_load"] = {"serving_s": w_serv, "bar_s": lbar, "ok": ok}
            out.append(f"| worker:1, against a TF server started by hand under the same load ({_f(probe)} s) | | | | "
                       f"{_f(w_serv)} | | serving <= that + 3 = {_f(lbar)} | {'ok' if ok else '**POOR**'} |")
        pbar = hand_first + RECOVERY_SLACK_S if hand_first is not None else None
        p_first = _med(p["first_step"])
        pv = ""
        if pbar is not None and p_first is not None:
            ok = p_first <= pbar
            pv = "ok" if ok else "**POOR**"
            verdicts["recovery_ps"] = {"first_step_s": p_first, "bar_s": pbar, "ok": ok}
        out.append(f"| ps:0 (whole job restarts) | {_f(_med(p['task_failed']))} | {_f(_med(p['relaunched']))} | "
                   f"{_f(_med(p['task_running']))} | {_f(_med(p['servers_up']))} | first step {_f(p_first)} "
                   f"(resumed from step {_f(_med(p['resumed_from_step']), 0)}) | first step <= hand bring-up + 3 = {_f(pbar)} | {pv} |")
        out += ["", f"{len(r['runs'])} run(s); failed runs (retried): {len(r.get('failures', []))}. "
                f"After the ps loss the other tasks had ended {_f(_med(p.get('others_ended')))} s after the kill.", ""]

    pl = results.get("placement")
    if pl:
        out += ["## Placement at scale (`Job.offers` -> `place`, synthetic offers; CPU time, median)", "",
                "| tasks | agents | placed | CPU ms per placement | CPU us per offer |", "|---|---|---|---|---|"]
        for row in pl["rows"]:
            out.append(f"| {row['tasks']} | {row['agents']} | {row['placed']} | {row['cpu_s_per_placement'] * 1e3:.2f} | "
                       f"{row['cpu_us_per_offer']:.1f} |")
        # Judged over each job size's whole range of agents (a single 10x step of a few milliseconds
        # moves by +-20% with the machine's noise): the geometric mean growth per 10x.
        spans = {}
        for tasks in sorted({row["tasks"] for row in pl["rows"]}):
            series = sorted((row["agents"], row["cpu_s_per_placement"]) for row in pl["rows"] if row["tasks"] == tasks)
            if len(series) >= 2 and series[0][1] > 0:
                decades = math.log10(series[-1][0] / series[0][0])
                spans[tasks] = (series[-1][1] / series[0][1]) ** (1 / decades)
        worst = max(spans.values()) if spans else None
        ok = worst is not None and worst <= LINEAR_MAX_GROWTH
        verdicts["placement_linear"] = {"growth_per_10x_agents_over_the_range": spans, "bar": LINEAR_MAX_GROWTH, "ok": ok}
        out += ["", "Growth of CPU per placement per 10x agents: " +
                ", ".join(f"{g['tasks']} tasks {g['agents']}: {g['growth']:.1f}x" for g in pl["growth_per_10x_agents"]) +
                "; over each job size's whole range: " + ", ".join(f"{t} tasks {g:.1f}x" for t, g in spans.items()) +
                f" (10x is linear; bar <= {LINEAR_MAX_GROWTH:g}x over the range): {'ok' if ok else '**POOR**'}.", ""]

    sc = results.get("scale")
    if sc and sc.get("configs"):
        out += ["## The whole scheduler against `tfmesos local-master` with many agents (trivial tasks, one per agent)", "",
                "| agents | tasks | first launch | all launched | all TASK_RUNNING | scheduler CPU s | CPU ms per task | "
                "status updates re-sent | master RSS MiB |", "|---|---|---|---|---|---|---|---|---|"]
        per_task: dict[int, list[tuple[int, float]]] = {}
        for c in sc["configs"]:
            cpu = _med(c["scheduler_cpu_s"])
            pt = cpu / c["tasks"] * 1e3 if cpu is not None else None
            if pt is not None:
                per_task.setdefault(c["agents"], []).append((c["tasks"], pt))
            out.append(f"| {c['agents']} | {c['tasks']} | {_f(_med(c['first_launch_s']))} | {_f(_med(c['all_launched_s']))} | "
                       f"{_f(_med(c['all_running_s']))} | {_f(_med(c['scheduler_cpu_s']))} | {_f(pt, 1)} | "
                       f"{_f(_med(c['status_updates_resent']), 0)} | {_f(_med(c['master_rss_mib']), 1)} |")
        growth_note = []
        for agents, pts in per_task.items():
            if len(pts) >= 2:
                pts.sort()
                g = pts[-1][1] / pts[0][1]
                ok = g <= SCALE_MAX_PER_TASK_GROWTH
                verdicts[f"scheduler_linear_{agents}_agents"] = {"cpu_per_task_growth": g, "tasks": [pts[0][0], pts[-1][0]],
                                                                 "bar": SCALE_MAX_PER_TASK_GROWTH, "ok": ok}
                growth_note.append(f"on {agents} agents, CPU per task grows {g:.1f}x from {pts[0][0]} to {pts[-1][0]} tasks "
                                   f"(constant is linear; bar <= {SCALE_MAX_PER_TASK_GROWTH:g}x): {'ok' if ok else '**POOR: super-linear**'}")
        marginal = _marginal_cpu(sc["configs"])
        if marginal:
            growth_note.append("CPU per added task (the fixed start taken out): " + ", ".join(
                f"{a}->{b} tasks {_f(ms, 2)} ms" for a, b, ms in marginal) + " (each TaskInfo of a gang carries the "
                "whole ClusterSpec, so a task's share of the bytes grows with the job; info)")
        out += ["", "Seconds from SUBSCRIBED. " + ("; ".join(growth_note) + "." if growth_note else ""), ""]
        ev = sc.get("per_event") or []
        if ev:
            out += ["One status update handled by `MesosAdapter.statusUpdate` into `JobShell` (median of 20), by job size; *live*: TASK_STARTING "
                    "after the launch, *terminal*: TASK_KILLED while the job is torn down:", "",
                    "| tasks | live: CPU ms with the state store (`--master`) | live: CPU ms, no store (embedded master) | "
                    "terminal: CPU ms with the store | terminal: wall ms with the store | terminal: CPU ms, no store | "
                    "teardown, projected: s of event handling (1 terminal update per task) |",
                    "|---|---|---|---|---|---|---|"]
            for e in ev:
                lv, tm = e["live"], e["terminal"]
                out.append(f"| {e['tasks']} | {_f(lv['with_state_store']['cpu_ms'], 3)} | {_f(lv['no_state_store']['cpu_ms'], 3)} | "
                           f"{_f(tm['with_state_store']['cpu_ms'])} | {_f(tm['with_state_store']['wall_ms'])} | "
                           f"{_f(tm['no_state_store']['cpu_ms'], 3)} | {_f(e['tasks'] * tm['with_state_store']['wall_ms'] / 1e3, 2)} |")
            notes = []
            for kind in ("live", "terminal"):
                persist = [(e["tasks"], e[kind]["with_state_store"]["cpu_ms"] - e[kind]["no_state_store"]["cpu_ms"]) for e in ev]
                if len(persist) < 2:
                    continue
                lo, hi = persist[0], persist[-1]
                decades = math.log10(hi[0] / lo[0])
                g = (max(hi[1], 0.01) / max(lo[1], 0.01)) ** (1 / decades) if decades > 0 else 1.0
                ok = g <= SCALE_MAX_PER_TASK_GROWTH
                verdicts[f"scheduler_{kind}_event_persistence_constant"] = {
                    "persistence_cpu_ms": {str(t): round(c, 3) for t, c in persist},
                    "growth_per_10x_tasks": g, "bar": SCALE_MAX_PER_TASK_GROWTH, "ok": ok}
                notes.append(f"{kind} updates: the state store adds {lo[1]:.2f} ms at {lo[0]} tasks, {hi[1]:.2f} ms at {hi[0]} "
                             f"({g:.1f}x per 10x tasks; it should not grow, bar <= {SCALE_MAX_PER_TASK_GROWTH:g}x): "
                             + ("ok" if ok else "**POOR: O(tasks) per event, O(tasks^2) per job**"))
            out += ["", "; ".join(notes) + ".", ""]

    out += ["## Footprint (RSS / USS in MiB, psutil, median)", "", "| process | RSS | USS |", "|---|---|---|"]
    if b:
        fp = b["footprint"]
        out.append(f"| scheduler with the embedded master (2 agents), job running | {_f(_med(fp['scheduler_with_embedded_master']['rss_mib']), 1)} | "
                   f"{_f(_med(fp['scheduler_with_embedded_master']['uss_mib']), 1)} |")
        out.append(f"| the same, peak over the whole job (sampled every 0.5 s) | {_f(_med(fp['scheduler_peak_rss_mib']), 1)} | |")
        out.append(f"| one executor (`python -m tfmesos.executor`) | {_f(_med(fp['executor']['rss_mib']), 1)} | {_f(_med(fp['executor']['uss_mib']), 1)} |")
        out.append(f"| for comparison: one TensorFlow server (ps:0) | {_f(_med(fp['tfserver_ps']['rss_mib']), 1)} | {_f(_med(fp['tfserver_ps']['uss_mib']), 1)} |")
    if sc:
        for m in sc.get("idle_master", []):
            out.append(f"| `tfmesos local-master --agents {m['agents']}` alone, idle | {_f(m.get('rss_mib'), 1)} | {_f(m.get('uss_mib'), 1)} |")
        for c in sc.get("configs", []):
            out.append(f"| `tfmesos local-master --agents {c['agents']}` running {c['tasks']} tasks | {_f(_med(c['master_rss_mib']), 1)} | |")
            out.append(f"| scheduler alone (`--master`), {c['tasks']} tasks on {c['agents']} agents, peak | {_f(_med(c['scheduler_peak_rss_mib']), 1)} | |")
    out.append("")
    out += _busy(results.get("busy"), verdicts)
    out += _real_gang(results.get("realgang"), verdicts)
    out += _real_gang_big(results.get("realgang_big"))
    out += _drain(results.get("drain"), verdicts)
    out += _taskinfo_bytes(results.get("taskinfo_bytes"), verdicts)
    poor = [k for k, v in verdicts.items() if not v.get("ok")]
    out += [f"Verdicts: {len(verdicts) - len(poor)} ok, {len(poor)} poor" + (f" ({', '.join(poor)})" if poor else "") +
            ". Analysis of poor figures: `benchmarks/README.md`.", ""]
    return "\n".join(out), verdicts


def _verdict(verdicts: dict[str, Any], key: str, value: float | None, ok: bool | None, bar: str) -> str:
    if value is None or ok is None:
        return "n/a"
    verdicts[key] = {"value": value, "bar": bar, "ok": ok}
    return "ok" if ok else "**MISSED**"


def _extra_sections(results: dict[str, Any], verdicts: dict[str, Any]) -> list[str]:
    """Issue 12's figures: pinned training pair, a whole job's CPU share, executor start, big gangs,
    the master at 10,000 agents, and the GPU run this machine cannot do."""
    out: list[str] = []
    pn = results.get("pinned")
    if pn:
        ratio = _med(pn["steps_per_s"]["pair_ratios"])
        v = _verdict(verdicts, "training_pinned", ratio, None if ratio is None else ratio >= TRAINING_MIN_RATIO,
                     f">= {TRAINING_MIN_RATIO}")
        steps = results["settings"]["pinned"]["steps"]
        out += ["## Training speed with both arms pinned to CPU 0 (`taskset -c 0`)", "",
                "| figure | tfmesos (median) | by hand (median) | ratio (median of pairs) | bar | verdict |",
                "|---|---|---|---|---|---|",
                f"| training speed (steps/s), TRAIN_STEPS={steps} | {_f(_med(pn['steps_per_s']['tfmesos']), 1)} | "
                f"{_f(_med(pn['steps_per_s']['hand']), 1)} | {_f(ratio, 3)} (n={_n(pn['steps_per_s']['pair_ratios'])}) | "
                f">= {TRAINING_MIN_RATIO} | {v} |",
                f"| CPU s of all job processes per 1000 steps | {_f(_med(pn['training_cpu_s_per_1000_steps']['tfmesos']))} | "
                f"{_f(_med(pn['training_cpu_s_per_1000_steps']['hand']))} | "
                f"{_f(_med(pn['training_cpu_s_per_1000_steps']['pair_ratios']), 3)} | info | |",
                f"| other users' load during training (cores of 2) | {_f(_med(pn['foreign_cores_training']['tfmesos']))} | "
                f"{_f(_med(pn['foreign_cores_training']['hand']))} | | info | |", "",
                "One core for the whole job in both arms: other users' load lands on the other core mostly, and "
                "a difference in how the kernel shares CPU between the job's processes (sessions, groups) shows "
                "undiluted.", ""]
    mr = results.get("makerun")
    if mr:
        share = _med(mr.get("tfmesos_cpu_share"))
        v = _verdict(verdicts, "tfmesos_cpu_share", share, None if share is None else share <= CPU_SHARE_MAX,
                     f"<= {CPU_SHARE_MAX:.0%}")
        out += ["## A whole `make run` job (400 steps): CPU of tfmesos' own processes", "",
                "| figure | tfmesos (median) | by hand (median) | bar | verdict |", "|---|---|---|---|---|",
                f"| CPU s of every process of the job, start to exit | {_f(_med(mr['job_cpu_s']['tfmesos']))} | "
                f"{_f(_med(mr['job_cpu_s']['hand']))} | info | |",
                f"| of which tfmesos' own (scheduler with the embedded master, 4 executors) | "
                f"{_f(_med(mr.get('tfmesos_cpu_s')))} | | info | |",
                f"| tfmesos' share of the job's CPU | {_f(share * 100 if share is not None else None, 1)}% | | "
                f"<= {CPU_SHARE_MAX:.0%} | {v} |",
                f"| chief's first training step (s) | {_f(_med(mr['first_step_s']['tfmesos']))} | "
                f"{_f(_med(mr['first_step_s']['hand']))} | info | |",
                f"| launch -> TASK_RUNNING per task, 4 executors starting at once (s) | "
                f"{_f(_med(mr.get('executor_start_s')), 3)} | | info | |", ""]
    sc = results.get("scale") or {}
    ex = sc.get("executor")
    if ex and _n(ex.get("spawn_to_running_s")):
        start, steady = _med(ex["spawn_to_running_s"]), _med(ex["steady_cpu_fraction"])
        v1 = _verdict(verdicts, "executor_start", start, None if start is None else start <= EXECUTOR_START_MAX_S,
                      f"<= {EXECUTOR_START_MAX_S * 1e3:.0f} ms")
        v2 = _verdict(verdicts, "executor_steady_cpu", steady, None if steady is None else steady <= EXECUTOR_STEADY_MAX,
                      f"<= {EXECUTOR_STEADY_MAX:.1%} of a core")
        out += ["## One executor on an idle master (one task, median of probes)", "",
                "| figure | value | bar | verdict |", "|---|---|---|---|",
                f"| agent spawns the executor -> TASK_RUNNING (ms; process start time has 10 ms resolution) | "
                f"{_f(start * 1e3 if start is not None else None, 0)} | <= {EXECUTOR_START_MAX_S * 1e3:.0f} | {v1} |",
                f"| scheduler's launch -> TASK_RUNNING (ms) | {_f(_med(ex['launch_to_running_s']) * 1e3 if _med(ex['launch_to_running_s']) is not None else None, 0)} | info | |",
                f"| the executor's CPU until then (ms) | {_f(_med(ex['startup_cpu_s']) * 1e3 if _med(ex['startup_cpu_s']) is not None else None, 0)} | info | |",
                f"| the executor's CPU while its task runs (% of a core) | {_f(steady * 100 if steady is not None else None, 3)} | "
                f"<= {EXECUTOR_STEADY_MAX * 100:g} | {v2} |",
                f"| its RSS (MiB) | {_f(_med(ex['executor_rss_mib']), 1)} | info | |", ""]
    gangs = [c for c in sc.get("configs", []) if c["tasks"] in GANG_BARS_S]
    if gangs:
        out += ["## Big gangs: every task RUNNING (ClusterSpec delivered), seconds from SUBSCRIBED", "",
                "| tasks | agents | all launched | all TASK_RUNNING | bar | verdict | CPU ms per task: executor and its task / "
                "master / scheduler | all that CPU / 2 cores (s) |",
                "|---|---|---|---|---|---|---|---|"]
        for c in gangs:
            running = _med(c["all_running_s"])
            bar = GANG_BARS_S[c["tasks"]]
            v = _verdict(verdicts, f"gang_{c['tasks']}", running, None if running is None else running <= bar, f"<= {bar:g} s")
            parts = [_med(c.get(k) or {}) for k in ("executors_cpu_s", "master_cpu_s", "scheduler_cpu_s")]
            per_task = " / ".join(_f(p / c["tasks"] * 1e3 if p is not None else None, 1) for p in parts)
            floor = sum(parts) / 2 if None not in parts else None  # type: ignore[arg-type]
            out.append(f"| {c['tasks']} | {c['agents']} | {_f(_med(c['all_launched_s']))} | {_f(running)} | <= {bar:g} | {v} | "
                       f"{per_task} | {_f(floor, 1)} |")
        out += ["", "*All launched*: every launch line printed (TaskInfos built); a gang's ACCEPTs then stream to the "
                "master pipelined. Every task has its own executor (`python -m tfmesos.executor`, forked by the "
                "embedded agent's fork server from an interpreter with its imports done). The CPU columns are whole-run "
                "figures (the executors' from the fork server's reaped children, the tasks' `sleep` included; the master's "
                "and the scheduler's own): on 2 cores their sum bounds the time to all RUNNING, whatever the order.", ""]
        out += _embedded_gang_now(sc.get("gang_1000_again"))
    ms = results.get("master")
    if ms and ms.get("sizes"):
        out += ["## The embedded master at cluster scale (`tfmesos local-master --agents N`, one run each)", "",
                "| agents | start (s) | RSS idle MiB | RSS with N offers out MiB | SUBSCRIBE -> offers (s) | master CPU s for it | "
                "offers in the first event | offering round (ms) | idle round (ms) | load (1 min) |",
                "|---|---|---|---|---|---|---|---|---|---|"]
        for m in ms["sizes"]:
            out.append(f"| {m['agents']} | {_f(m['started_s'])} | {_f(m['rss_idle_mib'], 1)} | {_f(m['rss_with_offers_mib'], 1)} | "
                       f"{_f(m['first_offers_s'])} | {_f(m.get('first_offers_master_cpu_s'))} | {m['offers_in_first_event']} | "
                       f"{_f(m['offering_round_ms'], 0)} | {_f(m['idle_round_ms'], 2)} | {_f(m.get('load_average_1min'))} |")
        big = [m for m in ms["sizes"] if m["agents"] == MASTER_AGENTS]
        if big:
            m = big[0]
            rss = max(x for x in (m["rss_idle_mib"], m["rss_with_offers_mib"]) if x is not None)
            v1 = _verdict(verdicts, "master_10000_rss", rss, rss <= MASTER_RSS_MAX_MIB, f"<= {MASTER_RSS_MAX_MIB:g} MiB")
            v2 = _verdict(verdicts, "master_10000_offer", m["first_offers_s"], m["first_offers_s"] <= MASTER_OFFER_MAX_S,
                          f"<= {MASTER_OFFER_MAX_S:g} s")
            out += ["", f"10,000 agents: RSS {_f(rss, 1)} MiB (bar <= {MASTER_RSS_MAX_MIB:g}): {v1}; offers "
                    f"{_f(m['first_offers_s'])} s after SUBSCRIBE (bar <= {MASTER_OFFER_MAX_S:g} s): {v2}. Round times are "
                    "the master's own `allocator/mesos/allocation_run_ms` (`/metrics/snapshot`): the round that offered "
                    "every agent, and an idle round with every agent's resources out on offer."]
        out.append("")
    h = results.get("history")
    if h:
        status = _med(h["status_gone_api_s"])
        v = _verdict(verdicts, "history_status", status, None if status is None else status < h["bar_s"],
                     f"< {h['bar_s']:g} s")
        out += ["## A finished job, after its scheduler left (whole commands, Python start-up included)", "",
                "| command | median s (n) | bar | verdict |", "|---|---|---|---|",
                f"| `tfmesos status NAME` with TFMESOS_API at the gone scheduler | {_f(status)} "
                f"(n={_n(h['status_gone_api_s'])}) | < {h['bar_s']:g} s | {v} |",
                f"| `tfmesos status NAME` | {_f(_med(h['status_s']))} (n={_n(h['status_s'])}) | info | |",
                f"| `tfmesos jobs` | {_f(_med(h['jobs_s']))} (n={_n(h['jobs_s'])}) | info | |",
                f"| `tfmesos logs NAME chief:0 --tail 5` (the end kept in the record) | {_f(_med(h['logs_s']))} "
                f"(n={_n(h['logs_s'])}) | info | |", ""]
    se = results.get("startend")
    if se:
        start, end = _med(se["start_s"]), _med(se["end_s"])
        v1 = _verdict(verdicts, "run_start", start, None if start is None else start <= se["start_bar_s"],
                      f"<= {se['start_bar_s']:g} s")
        v2 = _verdict(verdicts, "run_end", end, None if end is None else end <= se["end_bar_s"],
                      f"<= {se['end_bar_s']:g} s")
        out += ["## A tiny `tfmesos run` on the embedded master: start and end (whole command, Python start-up included)", "",
                "| figure | median s (n) | min | max | bar | verdict |", "|---|---|---|---|---|---|",
                f"| command start -> first launch | {_f(start, 3)} (n={_n(se['start_s'])}) | {_f(se['start_s']['min'], 3)} | "
                f"{_f(se['start_s']['max'], 3)} | <= {se['start_bar_s']:g} | {v1} |",
                f"| chief's exit -> command's exit | {_f(end, 3)} (n={_n(se['end_s'])}) | {_f(se['end_s']['min'], 3)} | "
                f"{_f(se['end_s']['max'], 3)} | <= {se['end_bar_s']:g} | {v2} |",
                f"| of the start: command start -> embedded master up | {_f(_med(se['master_up_s']), 3)} | | | info | |",
                f"| of the start: command start -> framework registered | {_f(_med(se['registered_s']), 3)} | | | info | |",
                f"| of the end: chief's exit -> its TASK_FINISHED printed | {_f(_med(se['finished_seen_s']), 3)} | | | info | |",
                f"| of the end: chief's exit -> summary printed | {_f(_med(se['summary_s']), 3)} | | | info | |",
                f"| the command's own CPU s (scheduler and embedded master) | {_f(_med(se['scheduler_cpu_s']), 3)} | | | info | |",
                ""]
        if se.get("measured"):  # run on its own: not the header's run
            m, b = se["measured"], se.get("before")
            out += [f"Run on its own: {m['date']}, commit {m['git_commit']}, {m['cpu_model']}, load average "
                    f"{m['load_average_at_start'][0]}-{m['load_average_at_end'][0]}."
                    + (f" Commit {b['git_commit']} right after: start {_f(_med(b['start_s']), 3)} s, end "
                       f"{_f(_med(b['end_s']), 3)} s, CPU {_f(_med(b['scheduler_cpu_s']), 3)} s." if b else ""), ""]
    lm = results.get("longmaster")
    if lm:
        slope, pslope = lm.get("rss_slope_kib_per_job_after_warmup"), lm.get("rss_slope_kib_per_job_parallel")
        fds, threads = lm.get("fds_range_after_warmup") or (None, None), lm.get("threads_range_after_warmup") or (None, None)
        v1 = _verdict(verdicts, "longmaster_succeeded", len(lm["failed"]), not lm["failed"], "every job SUCCEEDED")
        v2 = _verdict(verdicts, "longmaster_rss_slope", slope, None if slope is None else slope <= lm["slope_bar_kib"],
                      f"<= {lm['slope_bar_kib']:g} KiB a job")
        v4 = _verdict(verdicts, "longmaster_rss_slope_parallel", pslope,
                      None if pslope is None else pslope <= lm["slope_bar_kib"], f"<= {lm['slope_bar_kib']:g} KiB a job")
        v3 = _verdict(verdicts, "longmaster_fds_flat", fds[1], None if fds[0] is None else fds[0] == fds[1], "flat")
        out += ["## A long-lived shared local-master (issue 31)", "",
                f"{lm['jobs'] // 2} jobs (two workers running `true`) one after another, then {lm['jobs'] // 2} "
                f"{lm['parallel']} at a time, through one `tfmesos local-master --agents 2 --max-completed-frameworks "
                f"{lm['kept']}`; sampled after each job and each batch (`curve` in the results file).", "",
                "| figure | value | bar | verdict |", "|---|---|---|---|",
                f"| jobs failed | {len(lm['failed'])} of {lm['jobs']} | 0 | {v1} |",
                f"| RSS slope, one after another, after the first {lm['warmup']} jobs, KiB a job | {_f(slope, 1)} | "
                f"<= {lm['slope_bar_kib']:g} | {v2} |",
                f"| RSS slope, {lm['parallel']} at a time, from job {lm.get('parallel_warm_from_job')} (both agents' kept "
                f"lists full), KiB a job | {_f(pslope, 1)} | "
                f"<= {lm['slope_bar_kib']:g} | {v4} |",
                f"| RSS first -> last, KiB | {lm['rss_kib_first']} -> {lm['rss_kib_last']} | info | |",
                f"| open fds after the warm-up (min-max) | {fds[0]}-{fds[1]} | flat | {v3} |",
                f"| threads after the warm-up (min-max) | {threads[0]}-{threads[1]} | info (the IO pool's 4 at most) | |",
                f"| framework sandbox dirs in the work dir, at most | {lm['framework_dirs_max']} | <= {lm['kept']} per agent | |",
                f"| wall s: one after another / {lm['parallel']} at a time | {lm['sequential_s']} / {lm['parallel_s']} | info | |", ""]
    ex = results.get("coldexec")
    if ex:
        sub = ex["to_subscribe_ms"]["median"]
        v = _verdict(verdicts, "executor_cold_cpu", sub, None if sub is None else sub <= EXECUTOR_COLD_CPU_MAX_MS,
                     f"<= {EXECUTOR_COLD_CPU_MAX_MS:g} ms")
        rows = (("`python -m tfmesos.executor`, exec -> SUBSCRIBE sent", "to_subscribe_ms", f"<= {EXECUTOR_COLD_CPU_MAX_MS:g}", v),
                ("the same, exec -> TASK_RUNNING sent (a gang-launched `sleep`)", "to_running_ms", "info", ""),
                ("`python -c pass` (the interpreter's own start, the floor)", "python_pass_ms", "info", ""))
        out += ["## A cold executor's CPU (no fork server: as a real Mesos agent starts it; user + sys, ms)", "",
                "| figure | median (n) | min | max | bar | verdict |", "|---|---|---|---|---|---|"]
        out += [f"| {what} | {_f(ex[key]['median'], 1)} (n={ex[key]['n']}) | {_f(ex[key]['min'], 1)} | "
                f"{_f(ex[key]['max'], 1)} | {bar} | {verdict} |" for what, key, bar, verdict in rows]
        out.append("")
    out += ["## GPU", "",
            "Not measured: no GPU machine was lent to this task (issue 12, item 6: the MWMS example with one GPU per "
            "worker through the embedded master's GPU agents, against hand launch). Nothing here depends on one.", ""]
    return out
