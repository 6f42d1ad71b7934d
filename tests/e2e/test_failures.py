"""Jobs that fail, on the embedded master with real processes: the failure names the exception
that ended the task (summary, `tfmesos status`, the kept record), and `max_restarts` counts a
whole-job restart once."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

from tests.e2e.harness import ROOT, TFMESOS, LocalMaster, run_scheduler, stop_scheduler, wait_gone, write_options

CONVERT = "ValueError: Attempt to convert a value (PerReplica:{"

# As Keras 3's model.fit fails under MultiWorkerMirroredStrategy: a chained exception whose
# message is a tensor dump, then noise at shutdown (a failing __del__'s traceback).
FAILING_SCRIPT = textwrap.dedent('''
    import sys

    class Iterator:
        def __del__(self):
            raise RuntimeError("iterator closed twice")

    held = Iterator()
    dump = "\\n".join(f"  {i}: <tf.Tensor: shape=(32, 10), dtype=float32, numpy=array([0.1, 0.2])>" for i in range(300))
    try:
        {}["loss"]
    except KeyError:
        raise ValueError("Attempt to convert a value (PerReplica:{\\n" + dump + "\\n}) with an unsupported type")
''')


def tfmesos(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(TFMESOS + list(args), capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_a_failed_python_task_is_named_by_its_exception_in_the_summary_status_and_record(tmp_path):
    master = LocalMaster(tmp_path / "m", agents=1)
    try:
        run_failure_says_why(tmp_path, master)
    finally:
        master.stop()


def run_failure_says_why(tmp_path, master) -> None:
    """On any master (``address``): also test_failures_real_mesos.py."""
    script = tmp_path / "train.py"
    script.write_text(FAILING_SCRIPT)
    state = tmp_path / "state"
    # The chief (whose output is streamed) waits; worker:0 (output only in its sandbox) fails.
    opts = write_options(tmp_path / "o.json", service={"name": "says-why"},
                         job={"command": f"{sys.executable} {script}"},
                         roles={"chief": {"count": 1, "cpus": 0.1, "mem": 64, "command": "sleep 300"},
                                "worker": {"count": 1, "cpus": 0.1, "mem": 64, "restart_policy": "Never"}})
    run = run_scheduler(opts, "--master", master.address, "--state-dir", str(state))
    try:
        assert run.wait(120) == 1, run.output[-3000:]
    finally:
        stop_scheduler(run)
    out = run.output
    summary = re.search(r"job says-why FAILED: (.*)", out)
    assert summary, out[-3000:]
    assert re.fullmatch(rf"worker:0 \(says-why\.worker\.0\.\d+\) ended TASK_FAILED, exit code 1, {re.escape(CONVERT)}; "
                        r"not relaunched: restart policy Never", summary.group(1)), summary.group(1)
    assert re.search(rf"worker:0 +127\.0\.0\.1:\d+ +TASK_FAILED +restarts 0 exit 1  {re.escape(CONVERT)}$", out, re.M)
    assert "iterator closed twice" not in summary.group(1), "the shutdown noise after the traceback is not the cause"

    status = tfmesos("status", "says-why", "--state-dir", str(state))  # from the kept record
    assert status.returncode == 0, status.stderr
    assert "job says-why  FAILED: worker:0" in status.stdout and CONVERT in status.stdout.splitlines()[0]
    assert re.search(rf"worker:0 +\S+ +TASK_FAILED +restarts 0 exit 1  {re.escape(CONVERT)}$", status.stdout, re.M)
    kept = json.loads(tfmesos("status", "says-why", "--json", "--state-dir", str(state)).stdout)
    (worker,) = [t for t in kept["tasks"] if t["role"] == "worker"]
    assert worker["exception"] == CONVERT and worker["message"] == "process ended with exit code 1"
    assert not wait_gone("says-why", timeout=5)


def test_a_whole_job_restart_counts_once_against_max_restarts(tmp_path):
    """Two workers of a collective job, max_restarts 1: worker:1 fails in the first attempt and
    worker:0 in the second. Counted per task each had one restart left, and the job ran a third
    time; counted as the job's, the second failure ends it."""
    marks = tmp_path / "marks"
    marks.mkdir()
    # worker:0 fails from its second start on; worker:1 fails once worker:0 has started, in the
    # first attempt only (its own restart count is 1 after).
    command = (f'if [ "$TFMESOS_TASK_INDEX" = 0 ]; then [ -e {marks}/w0 ] && exit 1; '
               f'touch {marks}/w0; exec sleep 300; fi; '
               '[ "$TFMESOS_RESTART_COUNT" = 0 ] || exec sleep 300; '
               f'while [ ! -e {marks}/w0 ]; do sleep 0.1; done; exit 1')
    opts = write_options(tmp_path / "o.json", service={"name": "counts-once"}, job={"command": command},
                         roles={"worker": {"count": 2, "cpus": 0.1, "mem": 64, "restart_policy": "OnFailure",
                                           "max_restarts": 1}},
                         policies={"backoff_seconds": 0.2})
    run = run_scheduler(opts)
    try:
        assert run.wait(120) == 1, run.output[-3000:]
    finally:
        stop_scheduler(run)
    out = run.output
    assert "worker:1 TASK_FAILED exit 1: relaunch #1" in out
    assert out.count("with the whole job from its checkpoint") == 1, out[-3000:]
    assert re.search(r"job counts-once FAILED: worker:0 \(\S+\) ended TASK_FAILED, exit code 1, "
                     r"'process ended with exit code 1'; not relaunched: the whole job restarted once, the limit "
                     r"\(max_restarts 1: a whole-job restart counts once, whichever task failed\)", out), out[-3000:]
    assert not wait_gone("counts-once", timeout=5)


# As tf.function (and so Keras 2's model.fit) reports an error in traced code: the real exception
# under "in user code:" and the traced frames (tests/data/tracebacks/tf_keras_shape_bug.stderr).
SHAPE = 'ValueError: Input 0 of layer "sequential" is incompatible with the layer: expected shape=(None, 32), found shape=(None, 64)'
SHAPE_BUG = textwrap.dedent(f'''
    raise ValueError("in user code:\\n\\n"
                     '    File "/opt/venv/lib/python3.11/site-packages/tf_keras/src/engine/training.py", line 1398, in train_function  *\\n'
                     "        return step_function(self, iterator)\\n\\n"
                     "    " + {SHAPE!r})
''')


def test_the_same_bug_twice_in_a_row_stops_the_job_naming_its_real_cause(tmp_path):
    """Two workers of a collective job under OnFailure, max_restarts 5, each failing at once with
    the same shape bug: the first failure restarts the whole job, the second ends it, the summary
    naming the message under "in user code:" and why it was not relaunched; both workers show the
    restart."""
    (tmp_path / "train.py").write_text(SHAPE_BUG)
    opts = write_options(tmp_path / "o.json", service={"name": "same-bug"},
                         job={"command": f"{sys.executable} train.py", "workdir": str(tmp_path)},
                         roles={"worker": {"count": 2, "cpus": 0.1, "mem": 64, "restart_policy": "OnFailure",
                                           "max_restarts": 5}},
                         policies={"backoff_seconds": 0.2})
    run = run_scheduler(opts)
    try:
        assert run.wait(120) == 1, run.output[-3000:]
    finally:
        stop_scheduler(run)
    out = run.output
    assert out.count("with the whole job from its checkpoint") == 1, out[-3000:]
    assert re.search(rf"job same-bug FAILED: worker:\d \(\S+\) ended TASK_FAILED, exit code 1, {re.escape(SHAPE)}; "
                     r"not relaunched: the same exception as the failure before it: a bug that fails the same way "
                     r"every time, which no relaunch fixes \(restart_policy ExitCode stops at the first exit code "
                     r"1-127\)", out), out[-3000:]
    rows = re.findall(r"  worker:(\d) +\S+ +(TASK_\w+) +restarts (\d+)", out)
    assert sorted((w, r) for w, _, r in rows) == [("0", "1"), ("1", "1")], rows
    assert not wait_gone("same-bug", timeout=5)
