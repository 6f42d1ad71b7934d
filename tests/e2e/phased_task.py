"""A task for tests/e2e/test_nothing_left.py: each worker plays a phase of a training script.

``python phased_task.py FOLDER BEHAVIOUR_OF_WORKER_0 BEHAVIOUR_OF_WORKER_1`` (run under ``sh -c
'...; code=$?; echo after; exit $code'``, so that this Python is the shell's child, not the task's
process itself, as with most users' commands). Each worker first starts a child of its own
(``sleep``, in the task's process group: the task's children must end with it too), then, by its
behaviour:

- ``train``: says TRAINING and loops; a SIGTERM ends it.
- ``evaluate``: catches SIGTERM and goes on (as TensorFlow's preemption handling does after
  ``model.fit``), says EVALUATING and loops for minutes: only SIGKILL ends it.
- ``finish`` / ``fail``: waits until the other worker has said what it does, then exits 0 / 1.

What each says is also a file in FOLDER (``<what>-<index>``), for the test and the other worker.
"""
import os
import signal
import subprocess
import sys
import time

folder, behaviours = sys.argv[1], sys.argv[2:]
index = int(os.environ["TFMESOS_TASK_INDEX"])
behaviour = behaviours[index]
subprocess.Popen(["sleep", "600"])  # the task's own child


def say(what: str) -> None:
    open(os.path.join(folder, f"{what}-{index}"), "w").close()
    print(what.upper(), flush=True)


def other_said() -> bool:
    return any(os.path.exists(os.path.join(folder, f"{what}-{1 - index}")) for what in ("training", "evaluating"))


if behaviour == "evaluate":
    signal.signal(signal.SIGTERM, lambda signum, frame: print("caught SIGTERM, going on", flush=True))
if behaviour in ("finish", "fail"):
    while not other_said():
        time.sleep(0.05)
    say("finishing" if behaviour == "finish" else "failing")
    sys.exit(0 if behaviour == "finish" else 1)
say("training" if behaviour == "train" else "evaluating")
deadline = time.monotonic() + 600
while time.monotonic() < deadline:
    time.sleep(0.1)
