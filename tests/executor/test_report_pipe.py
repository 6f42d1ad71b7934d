"""Progress from training scripts (tfmesos.report): a no-op outside tfmesos; inside, values reach the executor."""
from __future__ import annotations

import os
import subprocess
import sys
import importlib
import threading

import tfmesos
from tfmesos.executor.report_pipe import REPORT_ENV, ReportPipe

report_module = importlib.import_module("tfmesos.task.report")


def test_report_outside_tfmesos_does_nothing(monkeypatch):
    monkeypatch.delenv(REPORT_ENV, raising=False)
    assert tfmesos.report(step=1, loss=0.5) is False


def test_reports_from_a_task_process_reach_the_reader_merged_and_in_order(tmp_path):
    got: list[dict] = []
    arrived = threading.Condition()

    def send(values: dict) -> None:
        with arrived:
            got.append(values)
            arrived.notify_all()

    fifo = tmp_path / "progress.fifo"
    pipe = ReportPipe(str(fifo), send)
    try:
        # A real task process, as the executor starts it: the variable names the FIFO.
        script = ("import numpy as np, tfmesos\n"
                  "assert tfmesos.report(step=0, total_steps=30)\n"
                  "for i in range(1, 31):\n"
                  "    assert tfmesos.report(step=i, loss=np.float32(1.0 / i), total_steps=30, note='x')\n"
                  "assert tfmesos.report(step=30, accuracy=float('nan'))\n")
        env = {**os.environ, REPORT_ENV: str(fifo), "PYTHONPATH": os.getcwd()}
        subprocess.run([sys.executable, "-c", script], env=env, check=True, timeout=60)
    finally:
        pipe.close()  # forwards what is left, like the executor after the task's end
    assert not fifo.exists()
    assert got, "nothing forwarded"
    # Each message holds what was reported since the one before (at most every FORWARD_SECONDS: a
    # loaded machine splits the burst); the scheduler merges them (core/job/view.py), as here.
    merged: dict = {}
    for values in got:
        merged.update(values)
    assert got[-1]["step"] == 30 and merged["total_steps"] == 30 and merged["note"] == "x"
    assert abs(merged["loss"] - 1.0 / 30) < 1e-6 and merged["accuracy"] == "nan"
    steps = [g["step"] for g in got if "step" in g]
    assert steps == sorted(steps), "reports keep their order"
    assert len(got) < 31, "a burst is forwarded as few messages, not one per report"


def test_report_never_blocks_or_raises_without_a_reader(tmp_path, monkeypatch):
    monkeypatch.setattr(report_module, "_fd", None)
    fifo = tmp_path / "nobody.fifo"
    os.mkfifo(fifo)
    monkeypatch.setenv(REPORT_ENV, str(fifo))
    assert tfmesos.report(step=1) is False  # no reader: dropped at once
    monkeypatch.setenv(REPORT_ENV, str(tmp_path / "missing"))
    assert tfmesos.report(step=1) is False
