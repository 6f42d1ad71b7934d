"""``tfrun``: douban/tfmesos' command line, on today's tfmesos.

    tfrun -w 2 -s 1 -- python train.py --ps_hosts {ps_hosts} --worker_hosts {worker_hosts} \\
        --job_name {job_name} --task_index {task_index}

Parameter servers and workers 1..N-1 run the command as Mesos tasks; worker 0 runs here, in a
child of this process, with its output on this terminal, as douban's tfrun did. tfrun exits
with worker 0's exit code, after killing every task and tearing the framework down.
``--print-options`` prints the equivalent options document for ``tfmesos run`` instead (there
worker 0 is a Mesos task too and the job succeeds when it exits 0).
"""
from __future__ import annotations

if __name__ == "__main__":  # python -m: a Ctrl-C during the imports below is no traceback (see quiet_start.py)
    from .quiet_start import quiet_imports

    quiet_imports()

import argparse
import json
import os
import re
import signal
import subprocess
import sys
from typing import Any, Sequence

from ..errors import TfmesosError
from ..options.load import OptionsError, read_options_file

PROG = "tfrun"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG, description="Run a between-graph TensorFlow job on Mesos with douban/tfmesos' flags: "
        "ps and workers 1..N-1 on Mesos, worker 0 here. Placeholders {ps_hosts}, {worker_hosts}, "
        "{job_name}, {task_index} in the command are filled in per task.")
    p.add_argument("-w", "--nworker", type=int, required=True, help="workers (worker 0 runs here)")
    p.add_argument("-s", "--nserver", type=int, required=True, help="parameter servers")
    p.add_argument("-m", "--master", help="Mesos master HOST:PORT or zk://...; default MESOS_MASTER, "
                   "else an embedded master")
    p.add_argument("-n", "--name", help="framework (service) name")
    p.add_argument("-C", "--containerizer_type", type=str.upper, choices=["MESOS", "DOCKER"], nargs="?",
                   help="accepted for compatibility: tfmesos always uses the Mesos containerizer")
    p.add_argument("-f", "--force_pull_image", action="store_true", help="accepted for compatibility (no effect)")
    p.add_argument("-Cw", "--worker-cpus", type=float, default=1.0)
    p.add_argument("-Gw", "--worker-gpus", type=int, default=0)
    p.add_argument("-Mw", "--worker-mem", type=float, default=1024.0)
    p.add_argument("-Cs", "--server-cpus", type=float, default=1.0)
    p.add_argument("-Gs", "--server-gpus", type=int, default=0)
    p.add_argument("-Ms", "--server-mem", type=float, default=1024.0)
    p.add_argument("-v", "--verbose", action="store_true", help="show the scheduler's events")
    p.add_argument("-V", "--volume", action="append", default=[], help="HOST_PATH:CONTAINER_PATH[:ro|rw]")
    p.add_argument("-r", "--role", help="Mesos role to subscribe with")
    p.add_argument("-e", "--extra_config", help="JSON file with \"initializer\"/\"finalizer\" commands")
    p.add_argument("--worker-logs", default="0",
                   help="comma-separated worker indices whose output to show here, or '*' for all")
    p.add_argument("--print-options", action="store_true",
                   help="print the equivalent options JSON for `tfmesos run` and exit")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- CMD ARGS...")
    return p


def options_document(args: argparse.Namespace, command: str, workdir: str) -> dict[str, Any]:
    """The options document these flags mean for `tfmesos run` (worker 0 on Mesos too): what
    ``--print-options`` prints and what ``run`` starts from (relaunches as douban's retries, the
    ``-e`` initializer/finalizer around each command)."""
    from .douban import apply_douban_extras, douban_name

    def role(count: int, cpus: float, mem: float, gpus: int) -> dict[str, Any]:
        # douban's scheduler relaunched a failed task; OnFailure does (docs/coming-from-douban.md).
        return {"count": count, "cpus": cpus, "mem": mem, "gpus": gpus, "server": False, "restart_policy": "OnFailure"}

    doc: dict[str, Any] = {
        "service": {"name": args.name or douban_name(command.split())},
        "job": {"command": command, "workdir": workdir},
        "roles": {
            "ps": role(args.nserver, args.server_cpus, args.server_mem, args.server_gpus),
            "worker": role(args.nworker, args.worker_cpus, args.worker_mem, args.worker_gpus),
        },
        "policies": {"success": "worker0"},
    }
    if args.role:
        doc["service"]["role"] = args.role
    if args.volume:
        doc["job"]["volumes"] = list(args.volume)
    extra = read_options_file(args.extra_config) if args.extra_config else None
    doc, _ = apply_douban_extras(doc, extra_config=extra, containerizer_type=args.containerizer_type,
                                 force_pull_image=args.force_pull_image)
    return doc


def streamed_workers(text: str, nworker: int) -> list[int]:
    if text.strip() == "*":
        return list(range(nworker))
    try:
        picked = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise OptionsError([f"--worker-logs: {text!r} is invalid: expected worker indices like 0,2 or '*'"]) from None
    bad = [i for i in picked if not 0 <= i < nworker]
    if bad:
        raise OptionsError([f"--worker-logs: worker {bad[0]} does not exist: expected 0..{nworker - 1}"])
    return picked


def tfrun_words(problem: str) -> str:
    """An options problem in the words of tfrun's command line: its command is the job's."""
    return re.sub(r"^\$\.(job|roles\.\w+)\.command:", "the command:", problem)


def run(args: argparse.Namespace, command: str) -> int:
    import dataclasses

    from . import cluster as cluster_api
    from ..core.tensorflow.clusterspec import hosts_env, substitute_placeholders, tf_config
    from localmesos import DEFAULT_PATH, task_path
    from ..core.spec import TaskKey

    doc = options_document(args, command, os.getcwd())
    doc["policies"] = {}  # worker 0 runs here: its exit ends the job, not a success policy
    doc["service"]["failover_timeout"] = cluster_api.DEFAULT_FAILOVER_TIMEOUT
    master = args.master or os.environ.get("MESOS_MASTER") or None
    host = cluster_api.reachable_host(master)
    local = TaskKey("worker", 0)
    job = cluster_api.cluster_job(doc, {local: f"{host}:{cluster_api.free_port(host)}"}, master)
    spec, resolved = job.spec, job.options
    for warning in job.warnings:
        print(f"{PROG}: warning: {tfrun_words(warning)}", file=sys.stderr)
    shown = [TaskKey("worker", i) for i in streamed_workers(args.worker_logs, args.nworker) if i]
    spec = dataclasses.replace(spec, streamed=tuple(shown))
    settings = cluster_api.ClusterSettings(master=master, host=host, wait_serving=False, quiet=not args.verbose)
    c = cluster_api.open_cluster(spec, resolved, settings)
    proc: subprocess.Popen | None = None
    cause, end = "cluster closed", "KILLED"  # the job's kept end says how worker 0 ended, once it has
    try:
        cluster = c.cluster_spec
        # Worker 0 runs on tfrun's own interpreter: plain `python` and $TFMESOS_PYTHON are that one, as
        # for the embedded master's tasks, even outside an activated venv.
        env = dict(os.environ, TF_CONFIG=json.dumps(tf_config(cluster, local)),
                   TFMESOS_JOB_NAME="worker", TFMESOS_TASK_INDEX="0", TFMESOS_PYTHON=sys.executable,
                   PATH=task_path(sys.executable, os.environ.get("PATH") or DEFAULT_PATH), **hosts_env(cluster))
        # The job's command as the Mesos tasks run it: -e's initializer and finalizer wrap worker 0 too.
        proc = subprocess.Popen(substitute_placeholders(doc["job"]["command"], cluster, local), shell=True, env=env,
                                start_new_session=True)
        while proc.poll() is None:
            if c.wait_finished(0.5):  # the cluster ended: a task failed for good
                print(f"[tfrun] the cluster ended: {c.cause}; stopping worker 0", file=sys.stderr)
                return 1
        code = proc.returncode if proc.returncode >= 0 else 128 - proc.returncode
        cause, end = f"worker:0 (run here by tfrun) exited {code}", "SUCCEEDED" if code == 0 else "FAILED"
        return code
    finally:
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        try:
            c.close(cause, end)
        finally:
            c.restore_handlers()


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    words = list(args.command)
    if words and words[0] == "--":
        words = words[1:]
    if not words:
        parser().error("the command to run is missing: tfrun [flags] -- CMD ARGS")
    if args.nworker < 1 or args.nserver < 0:
        parser().error("-w/--nworker must be >= 1 and -s/--nserver >= 0")
    if args.nworker == 1 and args.nserver == 0:
        parser().error("-w 1 -s 0: worker 0 runs here, so nothing is left to launch on Mesos: "
                       "expected -w >= 2 or -s >= 1")
    command = " ".join(words)  # as douban's tfrun: the words joined, then run by a shell
    try:
        if args.print_options:
            try:
                print(json.dumps(options_document(args, command, os.getcwd()), indent=2), flush=True)
            except BrokenPipeError:  # `tfrun ... --print-options | head`: as tfmesos run --dry-run
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                return 141
            return 0
        return run(args, command)
    except OptionsError as exc:
        for problem in exc.problems:
            print(f"{PROG}: {tfrun_words(problem)}", file=sys.stderr)
        return 2
    except TfmesosError as exc:  # the master unreachable, refused, ...
        print(f"{PROG}: {exc.line()}", file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":
    from .quiet_start import imported

    imported()
    sys.exit(main())
