"""tfmesos.cluster() from a Python process, douban's plus.py, and tfrun: real TensorFlow servers
on the embedded master; every test checks that nothing is left behind."""
from __future__ import annotations

import json
import os
import re
import signal
import sys

import psutil

from tests.e2e.harness import ROOT, LineProcess, LocalMaster, accuracy, find_task_process, wait_gone
from tfmesos.core.tensorflow.start_up_noise import is_start_up_noise

PYTHON = sys.executable
ENV = dict(os.environ, PYTHONPATH=str(ROOT), PATH=f"{os.path.dirname(PYTHON)}:{os.environ.get('PATH', '')}")


def _nothing_listens(targets: dict[str, str], service: str) -> bool:
    """No process of the cluster still serves its ports (another test's job may reuse a port)."""
    ports = {int(url.rsplit(":", 1)[1]) for url in targets.values()}
    for conn in psutil.net_connections("tcp"):
        if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port in ports and conn.pid:
            try:
                if psutil.Process(conn.pid).environ().get("TFMESOS_SERVICE") == service:
                    return False
            except psutil.Error:
                continue
    return True


def _described(processes: list[psutil.Process]) -> list[str]:
    """What a process left behind is, for the failure message: pid, parent, state, command."""
    out = []
    for p in processes:
        try:
            out.append(f"{p.pid} ppid={p.ppid()} {p.status()} {' '.join(p.cmdline())[:200]}")
        except psutil.Error as error:
            out.append(f"{p.pid}: {error!r}")
    return out


def test_notebook_trains_with_pss_as_coordinator_and_leaves_nothing():
    run = LineProcess([PYTHON, str(ROOT / "examples" / "notebook_pss" / "notebook.py")],
                      env=dict(ENV, TRAIN_STEPS="200"))
    assert run.wait(300) == 0, run.output[-4000:]
    m = re.search(r"test accuracy: ([0-9.]+)", run.output)
    assert m and float(m.group(1)) >= 0.9, run.output[-3000:]
    assert "cluster closed" in run.output
    assert re.search(r"ps:0 TASK_KILLED", run.output) and re.search(r"worker:1 TASK_KILLED", run.output)
    assert not wait_gone(f"cluster-{run.proc.pid}-0", timeout=10)


def test_leaving_by_exception_sigterm_or_sigkill_kills_every_task():
    for mode in ("raise", "sigterm", "sigkill"):
        run = LineProcess([PYTHON, str(ROOT / "tests" / "e2e" / "cluster_driver.py"), mode], env=ENV)
        ready = json.loads(run.wait_for(r"READY (.*)", 180).group(1))
        assert set(ready["targets"]) == {"/job:ps/task:0", "/job:worker/task:0"}
        assert set(ready["cluster_spec"]) == {"chief", "ps", "worker"}  # the caller is the chief
        masters = [p for p in psutil.Process(run.proc.pid).children() if "local-master" in p.cmdline()]
        assert len(masters) == 1  # the embedded master runs as a child of the caller
        if mode == "raise":
            assert run.wait(60) == 1
            assert "RuntimeError: boom inside the block" in run.output
        else:
            sig = signal.SIGTERM if mode == "sigterm" else signal.SIGKILL
            run.kill(sig)
            assert run.wait(60) in (128 + sig, -sig), run.output[-3000:]
        left = wait_gone(f"cluster-{run.proc.pid}-0", timeout=30)
        assert not left, (mode, _described(left + masters))
        assert _nothing_listens(ready["targets"], f"cluster-{run.proc.pid}-0"), mode
        _, alive = psutil.wait_procs(masters, timeout=30)
        assert not alive, mode


def test_a_killed_server_comes_back_at_the_same_address_and_the_caller_hears_of_it():
    run = LineProcess([PYTHON, str(ROOT / "tests" / "e2e" / "cluster_driver.py"), "relaunch"], env=ENV)
    run.wait_for(r"READY", 180)
    service = f"cluster-{run.proc.pid}-0"
    server = find_task_process(service, "worker", 0)
    assert server is not None
    server.kill()
    report = json.loads(run.wait_for(r"RELAUNCHED (.*)", 120).group(1))
    assert report["after"] == report["before"]
    assert any("worker:0" in e and "relaunch #1" in e for e in report["events"]), report
    assert run.wait(60) == 0, run.output[-3000:]
    assert not wait_gone(service, timeout=10)


def test_douban_plus_prints_42_and_tears_the_framework_down(tmp_path):
    master = LocalMaster(tmp_path / "master")
    try:
        run = LineProcess([PYTHON, str(ROOT / "examples" / "douban_plus" / "plus.py"), master.address], env=ENV)
        assert run.wait(300) == 0, run.output[-4000:]
        assert "42" in run.output.splitlines()
        assert re.search(r"\] cluster closed$", run.output, re.M), "a block left normally says closed"
        # plus.py runs TensorFlow in this process: its start-up lines are its own (the full `tensorflow`
        # distribution logs a failed cuInit where there is no GPU), as the console folds them in tasks.
        ours = "\n".join(line for line in run.output.splitlines() if not is_start_up_noise(line))
        assert not re.search(r"fail|Traceback", ours, re.I), ours[-3000:]
        state = master.state()
        assert state["frameworks"] == [] and len(state["completed_frameworks"]) == 1
        assert all(t["state"] == "TASK_KILLED" for t in state["completed_frameworks"][0]["completed_tasks"])
        assert not wait_gone(f"cluster-{run.proc.pid}-0", timeout=10)
    finally:
        master.stop()


def test_tfrun_runs_a_between_graph_script_with_worker_0_here(tmp_path):
    # douban's -e: an initializer before each task's script (the script, not a built-in server),
    # worker 0's here included; every task sees douban's TFMESOS_PS_HOSTS.
    started = tmp_path / "initialized"
    extra = tmp_path / "extra.json"
    extra.write_text(json.dumps(
        {"initializer": f'echo "$TFMESOS_JOB_NAME:$TFMESOS_TASK_INDEX@$TFMESOS_PS_HOSTS" >> {started}'}))
    run = LineProcess(
        [PYTHON, "-m", "tfmesos.client.tfrun", "-w", "2", "-s", "1", "-n", "tfrun-e2e", "-Cw", "0.5", "-Cs", "0.3",
         "-Ms", "768", "--worker-logs", "1", "-e", str(extra), "--", "python", "train.py", "--ps_hosts", "{ps_hosts}",
         "--worker_hosts", "{worker_hosts}", "--job_name", "{job_name}", "--task_index", "{task_index}"],
        env=dict(ENV, TRAIN_STEPS="200"), cwd=ROOT / "examples" / "tfrun_between_graph")
    assert run.wait(300) == 0, run.output[-4000:]
    assert accuracy(run.output) >= 0.9
    assert re.search(r"^worker:0 stopped at global step \d+", run.output, re.M)  # here, not forwarded
    assert "  worker:1 | worker:1 training" in run.output  # --worker-logs 1: forwarded from Mesos
    tasks = dict(line.split("@") for line in started.read_text().split())
    assert sorted(tasks) == ["ps:0", "worker:0", "worker:1"] and len(set(tasks.values())) == 1
    assert re.fullmatch(r"[\w.-]+:\d+", tasks["ps:0"])  # the one ps' host:port
    assert not wait_gone("tfrun-e2e", timeout=10)
