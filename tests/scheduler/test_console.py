"""What `tfmesos run` prints (issue 32): TensorFlow's start-up noise folded into one line per task
(shown with --tf-noise), and the summary the last of the job's lines."""
from __future__ import annotations

import io

from tfmesos.core.tensorflow.start_up_noise import is_start_up_noise
from tfmesos.scheduler.console import Console

# As TensorFlow 2.x writes them at import (twice in a process that imports it twice).
NOISE = [
    "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR",
    "I0000 00:00:1795815376.665209   10037 port.cc:153] oneDNN custom operations are on. You may see slightly "
    "different numerical results due to floating-point round-off errors from different computation orders.",
    "E0000 00:00:1795815376.7 10037 cuda_dnn.cc:8310] Unable to register cuDNN factory: Attempting to register "
    "factory for plugin cuDNN when one has already been registered",
    "2026-11-27 21:40:01.1: I tensorflow/core/platform/cpu_feature_guard.cc:210] This TensorFlow binary is optimized "
    "to use available CPU instructions in performance-critical operations.",
]


def test_start_up_noise_is_one_line_per_task_and_the_rest_stays():
    out = io.StringIO()
    console = Console(out)
    console.output("job.chief.0.1", NOISE + ["step 100 loss 0.22"] + NOISE)
    console.output("job.worker.1.3", NOISE)
    lines = out.getvalue().splitlines()
    assert lines == [
        "  chief:0 | (TensorFlow's start-up messages folded: tfmesos run --tf-noise shows them, "
        "tfmesos logs chief:0 --stderr has them)",
        "  chief:0 | step 100 loss 0.22",
        "  worker:1 | (TensorFlow's start-up messages folded: tfmesos run --tf-noise shows them, "
        "tfmesos logs worker:1 --stderr has them)",
    ]


def test_tf_noise_shows_it_all_and_real_warnings_are_never_folded():
    out = io.StringIO()
    Console(out, tf_noise=True).output("job.chief.0.1", NOISE)
    assert out.getvalue().splitlines() == [f"  chief:0 | {line}" for line in NOISE]
    for kept in ("W0000 00:00:1.2 10 grpc_server_lib.cc:1] connection to worker:1 failed",
                 "Traceback (most recent call last):", "step 1 loss 2.0"):
        assert not is_start_up_noise(kept), kept


def test_the_summary_is_the_last_of_the_jobs_lines():
    out = io.StringIO()
    console = Console(out)
    console.event("worker:0 TASK_KILLED")
    console.summary(["job j SUCCEEDED: chief:0 finished", "  chief:0  TASK_FINISHED"])
    console.event("worker:1 TASK_KILLED")  # late: the record keeps it
    console.output("job.chief.0.1", ["a late line"])  # late: the logs keep it
    console.progress("chief:0", {"step": 10, "total_steps": 10})
    printed = out.getvalue().splitlines()
    assert printed[-2].endswith("] job j SUCCEEDED: chief:0 finished") and printed[-1].endswith("]   chief:0  TASK_FINISHED")
    assert len(printed) == 3, printed


def _texts(out: io.StringIO) -> list[str]:
    """The lines without their time: '[tfmesos   1.2s] x' -> 'x'."""
    return [line.split("] ", 1)[1] if line.startswith("[tfmesos") else line for line in out.getvalue().splitlines()]


def test_the_repeat_count_sits_under_the_line_it_counts_before_a_tasks_output():
    out = io.StringIO()
    console = Console(out)
    for _ in range(3):
        console.line("worker:1 TASK_KILLED: killed")
    console.output("job.worker.0.3", ["Epoch 2/10"])
    console.line("worker:1 TASK_KILLED: killed")  # after a task's line: not "the line above" any more
    console.line("worker:1 TASK_KILLED: killed")
    console.line("launch worker:1")
    assert _texts(out) == ["worker:1 TASK_KILLED: killed", "(the line above repeated 2 more times)",
                           "  worker:0 | Epoch 2/10", "worker:1 TASK_KILLED: killed",
                           "(the line above repeated once more)", "launch worker:1"]
