"""The Keras examples (model.fit as TensorFlow's tutorials write it) on the embedded master: they
train to accuracy with tf-keras (tasks get TF_USE_LEGACY_KERAS=1), feed progress to /v1/status
through tfmesos.KerasProgress(), and resume after a worker is killed with -9 mid-fit. The
MultiWorkerMirrored example's plain fit is test_wheel_install.py's, run from the wheel."""
from __future__ import annotations

import json
import re
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from tests.e2e.harness import ROOT, LocalMaster, accuracy, run_scheduler, stop_scheduler, wait_gone, write_options
from tests.e2e.test_history import get
from tests.e2e.test_recovery import kill_task, run_and_kill

KERAS_MWMS = ROOT / "examples" / "keras_mwms_digits" / "options.json"
KERAS_PSS = ROOT / "examples" / "keras_pss_digits" / "options.json"


@pytest.fixture
def master(tmp_path):
    m = LocalMaster(tmp_path / "master")
    yield m
    m.stop()


@contextmanager
def _fitted(tmp_path: Path, master: LocalMaster, options: Path, name: str, ckpt: Path) -> Iterator[tuple[str, dict]]:
    """The example run to SUCCEEDED with accuracy >= 0.9, its scheduler kept serving meanwhile:
    (the API's address, the final /v1/status); nothing of it is left running after."""
    opts = write_options(tmp_path / "o.json", options, job={"checkpoint_dir": str(ckpt)})
    run = run_scheduler(opts, "--master", master.address, "--state-dir", str(tmp_path / "state"),
                        "--keep-serving", "120")
    try:
        api = run.wait_for(r"status page on http://(\S+)/", 60).group(1)
        run.wait_for(rf"job {name} (SUCCEEDED|FAILED)", 400)
        assert f"job {name} SUCCEEDED" in run.output, run.output[-4000:]
        assert accuracy(run.output) >= 0.9
        # Served on from here: the SIGTERM of stop_scheduler ends that at once. (Sent as the end's
        # line came, it could land before the served end's own handlers: the run then served its
        # 120 s and the test waited 60 s for it.)
        run.wait_for(r"status page stays on http://\S+/ for 120 s", 60)
        yield api, json.loads(get(api, "/v1/status"))
    finally:
        stop_scheduler(run)
    assert not wait_gone(name)


# The MultiWorkerMirrored example's fit to accuracy (progress and loss series on /v1/status, the
# model saved by worker 0, BackupAndRestore's backup cleared) is test_wheel_install.py's run: the
# same assertions, on the example installed from the wheel as a user has it (one run serves both).


def test_keras_pss_example_fits_to_accuracy_and_the_evaluator_evaluates_its_checkpoints(tmp_path, master):
    ckpt = tmp_path / "ckpt"
    with _fitted(tmp_path, master, KERAS_PSS, "keras-pss-digits", ckpt) as (api, status):
        assert status["progress"]["step"] == status["progress"]["total_steps"] == 300, status["progress"]
        log = json.loads(get(api, "/v1/logs/evaluator:0?tail=200"))["data"]
        evaluated = [float(a) for a in re.findall(r"evaluated checkpoint of epoch \d+: loss \S+ accuracy ([0-9.]+)", log)]
        assert evaluated and max(evaluated) >= 0.9, log[-3000:]
    assert sorted(p.name for p in (ckpt / "ckpt").glob("ckpt-*.index")) == [f"ckpt-{e}.index" for e in range(1, 7)]
    assert list((ckpt / "log" / "train").glob("events.out.tfevents.*")), "the TensorBoard callback wrote its events"


def _epochs(out: str, task: str) -> list[int]:
    return [int(e) for e in re.findall(rf"{re.escape(task)} \| Epoch (\d+)/\d+", out)]


# The kill scenarios run against any master (``address``): the embedded one here, a real Apache
# Mesos in test_recovery_real_mesos.py.

# The kill comes in epoch 5; the job cannot end without the relaunch (MultiWorkerMirrored restarts
# the whole job), so a few epochs after it do: 12 epochs of 20 steps (40 trained 560 steps more).
MWMS_KILL_EPOCHS = 12


def run_keras_mwms_killed_worker(tmp_path, master) -> None:
    """kill -9 of worker 1 in epoch 5 (of MWMS_KILL_EPOCHS): it is relaunched and restores
    BackupAndRestore's last epoch; worker 0 goes on, or goes back to that epoch (on real Mesos it
    ran epoch 5 again): neither starts again at epoch 1."""
    ckpt = tmp_path / "ckpt"
    opts = write_options(tmp_path / "o.json", KERAS_MWMS, service={"name": "keras-mwms-kill"},
                         job={"checkpoint_dir": str(ckpt), "env": [f"EPOCHS={MWMS_KILL_EPOCHS}", "STEPS_PER_EPOCH=20"]})
    run, api = None, None
    try:
        run = run_scheduler(opts, "--master", master.address, "--state-dir", str(tmp_path / "state"),
                            "--keep-serving", "120")
        api = run.wait_for(r"status page on http://(\S+)/", 60).group(1)
        run.wait_for(rf"worker:0 \| Epoch 5/{MWMS_KILL_EPOCHS}", 300)
        kill_task("keras-mwms-kill", "worker", 1)
        run.wait_for(r"job keras-mwms-kill (SUCCEEDED|FAILED)", 400)
        out = run.output
        assert "job keras-mwms-kill SUCCEEDED" in out, out[-4000:]
        summary = run.wait_for(r"worker:1 +\S+ +(TASK_\w+) +restarts (\d+)", 30)  # the summary follows the end's line
        assert summary.groups() == ("TASK_FINISHED", "1"), summary.group(0)
        worker0_row = run.wait_for(r"worker:0 +\S+ +TASK_\w+ +restarts (\d+)", 30)
        print(summary.group(0), "|", worker0_row.group(0))
        run.wait_for(r"status page stays on http://\S+/ for 120 s", 60)  # served on: stop_scheduler's SIGTERM ends it
        assert worker0_row.group(1) == "1", "worker 0 was relaunched with the whole job: its restart counts"
        relaunched = json.loads(get(api, "/v1/logs/worker:1?tail=400"))["data"]
    finally:
        if run is not None:
            stop_scheduler(run)
    assert accuracy(out) >= 0.9
    resumed = [int(e) for e in re.findall(rf"Epoch (\d+)/{MWMS_KILL_EPOCHS}", relaunched)]
    print(f"relaunched worker:1 ran epochs {resumed[:1]}..{resumed[-1:]}; worker:0 {_epochs(out, 'worker:0')}")
    assert resumed and resumed[0] >= 5, f"the relaunched worker started at epoch {resumed[:1]}, not after its backup"
    assert resumed[-1] == MWMS_KILL_EPOCHS
    worker0 = _epochs(out, "worker:0")
    assert worker0.count(1) == 1 and worker0[-1] == MWMS_KILL_EPOCHS, worker0
    assert min(worker0[worker0.index(5):]) >= 5, f"worker 0 went back before its last backup: {worker0}"
    assert not wait_gone("keras-mwms-kill")


# The relaunch is decided as the kill is heard and the coordinator carries on with worker 0: the
# epochs after the kill need only last that long (8 of 50 steps; 12 of 100 trained 800 steps more).
PSS_KILL_EPOCHS = 8


def run_keras_pss_killed_worker(tmp_path, master) -> None:
    """kill -9 of worker 1 in epoch 3 (of PSS_KILL_EPOCHS): it is relaunched and the coordinator
    carries on; where the chief restarted all the same (below), it resumes from its backup."""
    opts = write_options(tmp_path / "o.json", KERAS_PSS, service={"name": "keras-pss-kill"},
                         job={"checkpoint_dir": str(tmp_path / "ckpt"),
                              "env": [f"EPOCHS={PSS_KILL_EPOCHS}", "STEPS_PER_EPOCH=50"]})
    out = run_and_kill(tmp_path, master, opts, rf"chief:0 \| Epoch 3/{PSS_KILL_EPOCHS}", "worker", 1)
    assert accuracy(out) >= 0.9
    assert "worker:1 TASK_FAILED" in out and "relaunch #1" in out
    chief = _epochs(out, "chief:0")
    lines = "\n".join(line for line in out.splitlines() if "chief:0" in line or "[tfmesos" in line)[-8000:]
    restarted = re.search(r"chief:0: restarting from its checkpoint because .*|chief:0 TASK_FAILED.*", out)
    if restarted is None:
        # The usual case: worker 1 relaunched at its old host:port, the coordinator finds it again.
        assert chief == list(range(1, PSS_KILL_EPOCHS + 1)), "the same fit went on: every epoch once:\n" + lines
        assert re.search(r"chief:0 +127\.0\.0\.1:\d+ +TASK_FINISHED +restarts 0", out), "the chief was not relaunched"
    else:
        # The chief restarted: tfmesos restarts it when worker 1's old port was not offered (a
        # running coordinator cannot learn a new worker address: tf_profile.restart_when_moved), and
        # relaunches it when its coordinator failed of the kill. Either way its BackupAndRestore
        # resumes at the epoch after its last backup: never at epoch 1, at most at the kill's epoch.
        print(f"the chief restarted ({restarted.group(0)}): it resumed from its backup")
        again = next((i for i in range(1, len(chief)) if chief[i] <= chief[i - 1]), None)
        assert again is not None, "the restarted chief's fit started again at an epoch it had run:\n" + lines
        assert chief[:again] == list(range(1, chief[again - 1] + 1)) and chief[again] >= 3, lines
        assert chief[again:] == list(range(chief[again], PSS_KILL_EPOCHS + 1)), lines
        assert re.search(r"chief:0 +\S+ +TASK_FINISHED ", out), lines
    assert not wait_gone("keras-pss-kill")


def test_keras_mwms_worker_killed_mid_fit_resumes_from_the_last_epoch(tmp_path, master):
    run_keras_mwms_killed_worker(tmp_path, master)


def test_keras_pss_worker_killed_mid_fit_the_coordinator_carries_on(tmp_path, master):
    run_keras_pss_killed_worker(tmp_path, master)
