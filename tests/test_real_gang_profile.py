"""The real-agent gang bench's reading of Mesos' logs (benchmarks/real_gang.py): each phase's last
task and per-task step from GLOG lines, only what an arm wrote after its offsets, and the
per-round ratios to the floor."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from benchmarks.real_gang import log_offsets, profile_arm, summarize

FW = "fw-0000"


def _glog(seconds: float, text: str) -> str:
    return f"I20261128 00:31:{seconds:09.6f}  5496 x.cpp:1] {text}\n"


def _cluster(tmp_path: Path) -> SimpleNamespace:
    (tmp_path / "logs").mkdir()
    return SimpleNamespace(home=tmp_path)


def _write(path: Path, lines: list[str]) -> None:
    with open(path, "a") as f:
        f.writelines(lines)


def _arm(master: SimpleNamespace, start: float, tasks: list[str], launch_s: float) -> None:
    logs = master.home / "logs"
    _write(logs / "master.out", [
        _glog(start, "Subscribing framework 'gang' with checkpointing enabled"),
        _glog(start + 0.01, f"Sending offers [ O0 ] to framework {FW} (gang)"),
        _glog(start + 0.1, "Processing ACCEPT call for offers: [ O0 ] on agent S0"),
        *[_glog(start + 0.2, f"Launching task {t} of framework {FW} (gang) with resources []") for t in tasks],
        *[_glog(start + 0.5 + launch_s + i, f"Forwarding status update TASK_RUNNING (Status UUID: u) for task {t} of framework {FW}")
          for i, t in enumerate(tasks)],
    ])
    agent = []
    for i, t in enumerate(tasks):
        t0 = start + 0.3 + i  # the agent takes the tasks one second apart
        agent += [
            _glog(t0, f"Got assigned task '{t}' for framework {FW}"),
            _glog(t0 + 0.01, f"Launching executor '{t}' of framework {FW} with resources []"),
            _glog(t0 + 0.02, f"Launching container c{i} for executor '{t}' of framework {FW}"),
            _glog(t0 + 0.05, f"Checkpointing container's forked pid 9 to '/w/meta/executors/{t}/runs/c{i}/pids/forked.pid'"),
            _glog(t0 + 0.05 + launch_s, f"Received Subscribe request for HTTP executor '{t}' of framework {FW}"),
            _glog(t0 + 0.06 + launch_s, f"Sending queued task '{t}' to executor '{t}' of framework {FW} (via HTTP)"),
            _glog(t0 + 0.08 + launch_s, f"Handling status update TASK_RUNNING (Status UUID: u) for task {t} of framework {FW}"),
            _glog(t0 + 0.09 + launch_s, f"Forwarding the update TASK_RUNNING (Status UUID: u) for task {t} of framework {FW} to m"),
        ]
    _write(logs / "agent-5451.out", agent)


def _row(profile: dict, phase: str) -> dict:
    return next(r for r in profile["phases"] if r["phase"] == phase)


def test_each_phase_gives_its_last_task_and_median_step_from_the_logs_of_the_arm_alone(tmp_path: Path) -> None:
    master = _cluster(tmp_path)
    _arm(master, 0.0, ["a.1", "a.2"], launch_s=9.0)  # an earlier arm: not this one's
    offsets = log_offsets(master)
    _arm(master, 20.0, ["b.1", "b.2", "b.3"], launch_s=2.0)
    profile = profile_arm(master, offsets)
    assert _row(profile, "offer cycle (SUBSCRIBE -> offers sent)")["last_s"] == 0.01
    assert _row(profile, "scheduler's first ACCEPT (at the master)")["last_s"] == 0.1
    assert _row(profile, "master launched")["tasks"] == 3
    subscribed = _row(profile, "executor subscribed")
    assert subscribed["tasks"] == 3 and subscribed["last_s"] == 2.3 + 2 + 0.05 and subscribed["median_step_s"] == 2.0
    assert _row(profile, "forked")["median_step_s"] == 0.03
    assert _row(profile, "RUNNING at master")["last_s"] == 0.5 + 2.0 + 2


def test_the_ratio_to_the_floor_is_taken_per_round_then_the_median() -> None:
    samples = {"tfmesos": [{"seconds": 12.0, "profile": {}}, {"seconds": 30.0, "profile": {}}, {"error": "x"}],
               "floor": [{"seconds": 10.0, "profile": {}}, {"seconds": 20.0, "profile": {}}, {"seconds": 5.0, "profile": {}}]}
    out = summarize(samples, 100)
    assert out["median_ratio_to_floor"]["tfmesos"] == 1.35  # (1.2, 1.5); the failed round is no pair
    assert out["median_s"] == {"tfmesos": 21.0, "floor": 10.0}
