"""cluster()'s and tfrun's translation into a job (no process started): douban's jobs_def,
the caller as an external cluster member, volumes, extra_config, tfrun's flags."""
from __future__ import annotations

import configparser
import json
import os
from pathlib import Path

import pytest

from tfmesos.client import cluster as cluster_api, douban, tfrun
from tfmesos.core.job.job import Job
from tfmesos.options.load import OptionsError
from tfmesos.core.spec import TaskKey, Volume
from tfmesos.options.jobspec import parse_volume




ROOT = Path(__file__).resolve().parents[2]


def _spec(doc, external=None):
    return cluster_api.cluster_job(doc, external or {}, "127.0.0.1:5050").spec


def test_roles_become_relaunching_servers_and_the_caller_is_the_chief():
    chief = {TaskKey("chief", 0): "127.0.0.1:7000"}
    spec = _spec({"roles": cluster_api.roles_options({"ps": 1, "worker": {"count": 2, "cpus": 0.5}})}, chief)
    assert [k for k in spec.task_keys()] == [TaskKey("ps", 0), TaskKey("worker", 0), TaskKey("worker", 1)]
    assert all(r.command is None and r.restart_policy == "OnFailure" for r in spec.roles)
    assert spec.success_keys == () and spec.streamed_keys == ()
    job = Job.new(spec, 0.0)
    for i, rec in enumerate(job.tasks.values()):
        rec.hostname, rec.port = "10.0.0.1", 9000 + i
    assert job.cluster() == {"chief": ["127.0.0.1:7000"], "ps": ["10.0.0.1:9000"],
                             "worker": ["10.0.0.1:9001", "10.0.0.1:9002"]}


def test_parameter_servers_alone_are_a_cluster():
    spec = _spec({"roles": cluster_api.roles_options({"ps": 2})})
    assert spec.task_keys() == [TaskKey("ps", 0), TaskKey("ps", 1)]


def test_bad_roles_name_the_field():
    with pytest.raises(OptionsError, match=r"\$\.roles\.ps: 'two' is invalid"):
        cluster_api.roles_options({"ps": "two"})
    with pytest.raises(OptionsError, match=r"roles"):
        _spec({"roles": cluster_api.roles_options({"parameter_server": 1})})
    with pytest.raises(OptionsError, match=r"\$\.roles\.chief\.count: the calling process is the chief"):
        _spec({"roles": cluster_api.roles_options({"chief": 1, "worker": 1})}, {TaskKey("chief", 0): "h:1"})
    # cluster() makes the checks `tfmesos run` makes of a file too (preflight's, before it starts).
    with pytest.raises(OptionsError, match=r"\$\.roles\.ps\.command: placeholder \{ps_host\} does not exist"):
        _checked({"roles": {"ps": {"count": 1, "server": False, "command": "serve {ps_host}"}}})
    with pytest.raises(OptionsError, match=r"TF_CONFIG is set by tfmesos"):
        _checked({"job": {"env": ["TF_CONFIG={}"]}, "roles": cluster_api.roles_options({"ps": 1})})


def _checked(doc):
    return cluster_api.cluster_job(doc, {}, "127.0.0.1:5050").warnings


def test_douban_jobs_def_maps_onto_roles_with_douban_defaults():
    doc, external = douban.jobs_def_options(
        [{"name": "ps", "num": 2}, {"name": "worker", "num": 2, "cpus": 2, "gpus": 1, "cmd": "python w.py"}],
        volumes={"/data": "/mnt/data"}, local_task=None)
    assert external == {}
    assert doc["roles"]["ps"] == {"count": 2, "cpus": 1.0, "mem": 1024.0, "gpus": 0, "server": True, "command": "",
                                  "restart_policy": "OnFailure"}
    assert doc["roles"]["worker"]["command"] == "python w.py" and doc["roles"]["worker"]["server"] is False
    assert _spec(doc).volumes == (Volume("/mnt/data", "/data", "RW"),)


def test_douban_local_task_takes_worker_0_and_start_needs_it():
    doc, external = douban.jobs_def_options([{"name": "worker", "num": 3, "start": 1}], local_task=("worker", "h:5"))
    assert external == {TaskKey("worker", 0): "h:5"}
    assert _spec(doc, external).task_keys() == [TaskKey("worker", 1), TaskKey("worker", 2)]
    with pytest.raises(OptionsError, match="jobs_def: worker starts at index 1: expected local_task"):
        douban.jobs_def_options([{"name": "worker", "num": 3, "start": 1}])


def test_douban_errors_name_the_field():
    with pytest.raises(OptionsError, match=r"jobs_def\[0\]\.name: 'trainer' is invalid: expected one of chief, ps"):
        douban.jobs_def_options([{"name": "trainer", "num": 1}])
    with pytest.raises(OptionsError, match=r"jobs_def\[0\]\.nmu: unknown field"):
        douban.jobs_def_options([{"name": "ps", "num": 1, "nmu": 2}])
    with pytest.raises(OptionsError, match=r"extra_config\.setup: unknown key"):
        douban.jobs_def_options([{"name": "ps", "num": 1}], extra_config={"setup": "x"})


def test_extra_config_wraps_commands_and_servers():
    assert douban.wrap_command("python t.py", {"initializer": "mkdir -p d", "finalizer": "rm -r d"}) == (
        "mkdir -p d && python t.py; rc=$?; rm -r d; exit $rc")
    doc, _ = douban.jobs_def_options([{"name": "ps", "num": 1}], extra_config={"initializer": "echo hi"})
    assert doc["roles"]["ps"]["server"] is False
    assert doc["roles"]["ps"]["command"] == 'echo hi && "$TFMESOS_PYTHON" -m tfmesos.task.tfserver'


def test_volumes_parse_and_reach_the_executor_container():
    from tfmesos.core.actions import TaskLaunch
    from tfmesos.mesos.taskinfo import ExecutorSettings, OfferLedger, build_task_info
    from tfmesos.core.spec import Resources

    assert parse_volume("/a:/b:ro") == Volume("/b", "/a", "RO")
    with pytest.raises(OptionsError, match=r"\$\.job\.volumes: '/a' is invalid"):
        parse_volume("/a")
    spec = _spec({"roles": {"ps": {"count": 1, "server": True}}, "job": {"volumes": ["/d:/mnt/d:ro"]}})
    offer = {"resources": [{"name": "cpus", "type": "SCALAR", "scalar": {"value": 4}},
                           {"name": "mem", "type": "SCALAR", "scalar": {"value": 4096}},
                           {"name": "ports", "type": "RANGES", "ranges": {"range": [{"begin": 9000, "end": 9010}]}}]}
    info = build_task_info(spec, TaskLaunch(TaskKey("ps", 0), "t.ps.0.1", 9000, Resources(1, 1024), 0), "a1",
                           OfferLedger(offer), ExecutorSettings(python="python3"))
    assert info["executor"]["container"]["volumes"] == [{"container_path": "/mnt/d", "host_path": "/d", "mode": "RO"}]


def test_tfrun_print_options_is_a_valid_options_document(capsys):
    assert tfrun.main(["-w", "3", "-s", "1", "-Cw", "2", "-Gw", "1", "-Ms", "512", "-V", "/data:/data", "-r", "team",
                       "-n", "mnist", "--print-options", "--", "python", "t.py", "--job_name", "{job_name}"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["job"]["command"] == "python t.py --job_name {job_name}"
    assert doc["roles"]["worker"]["count"] == 3 and doc["roles"]["worker"]["gpus"] == 1
    assert doc["roles"]["ps"]["mem"] == 512 and doc["service"] == {"name": "mnist", "role": "team"}
    spec = _spec(doc)  # what `tfmesos run` would accept
    assert spec.volumes == (Volume("/data", "/data", "RW"),)
    # douban's scheduler relaunched failed tasks; so does the printed document, as tfrun itself does.
    assert [doc["roles"][r]["restart_policy"] for r in ("ps", "worker")] == ["OnFailure", "OnFailure"]


def test_tfrun_extra_config_wraps_the_script_not_a_server(tmp_path, capsys):
    """tfrun's ps and workers run the user's script (job.command): -e wraps that script. It used to
    replace it with the built-in TensorFlow server wrapped in the initializer and finalizer."""
    extra = tmp_path / "extra.json"
    extra.write_text(json.dumps({"initializer": "mkdir -p d", "finalizer": "rm -r d"}))
    assert tfrun.main(["-w", "2", "-s", "1", "-e", str(extra), "--print-options", "--", "python", "t.py"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["job"]["command"] == "mkdir -p d && python t.py; rc=$?; rm -r d; exit $rc"
    assert all("command" not in role and role["server"] is False for role in doc["roles"].values())
    spec = _spec(doc)
    assert {role.name: role.command for role in spec.roles} == {"ps": doc["job"]["command"], "worker": doc["job"]["command"]}


def test_tfrun_flags_errors_and_entry_point(capsys):
    assert tfrun.streamed_workers("*", 3) == [0, 1, 2] and tfrun.streamed_workers("0,2", 3) == [0, 2]
    with pytest.raises(OptionsError, match="--worker-logs: worker 5 does not exist"):
        tfrun.streamed_workers("5", 2)
    with pytest.raises(SystemExit):
        tfrun.main(["-w", "1", "-s", "1"])
    assert "the command to run is missing" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        tfrun.main(["-w", "1", "-s", "0", "--", "true"])  # worker 0 runs here: nothing for Mesos
    assert "-w 1 -s 0: worker 0 runs here, so nothing is left to launch on Mesos" in capsys.readouterr().err
    # The checks `tfmesos run` makes of an options file, in tfrun's words (it used to run the command
    # with the literal {worker_host} in it).
    assert tfrun.main(["-w", "2", "-s", "0", "--", "echo", "{worker_host}"]) == 2
    assert "tfrun: the command: placeholder {worker_host} does not exist" in capsys.readouterr().err
    cfg = configparser.ConfigParser()
    cfg.read(cluster_api.__file__.rsplit("/tfmesos/", 1)[0] + "/setup.cfg")
    assert "tfrun = tfmesos.client.entry:tfrun" in cfg["options.entry_points"]["console_scripts"]  # tfmesos.client.tfrun.main, quiet on an early Ctrl-C


def test_import_tfmesos_stays_light():
    import subprocess
    import sys

    heavy = "('tfmesos.client.cluster', 'tfmesos.scheduler.job_shell', 'localmesos', 'pymesos', 'tensorflow')"
    code = f"import sys, tfmesos; print(sorted(m for m in sys.modules if m.startswith({heavy})))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_an_unreachable_master_is_a_clear_error_and_leaves_handlers_alone():
    import signal

    from tfmesos.errors import UnreachableError

    before = signal.getsignal(signal.SIGTERM)
    with socket_closed_port() as port:
        with pytest.raises(UnreachableError, match=f"127.0.0.1:{port}"):
            with cluster_api.cluster({"ps": 1}, master=f"127.0.0.1:{port}", connect_timeout=2):
                pass
    assert signal.getsignal(signal.SIGTERM) is before


def socket_closed_port():
    import contextlib
    import socket

    @contextlib.contextmanager
    def closed():
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        yield port  # bound once, now closed: nothing listens there

    return closed()


def test_a_cluster_job_snapshots_without_a_success_task():
    spec = _spec({"roles": cluster_api.roles_options({"ps": 1})})
    snap = Job.new(spec, 0.0).snapshot()
    assert [t.role for t in snap.tasks] == ["ps"] and snap.progress is None


def test_douban_jobs_keywords_and_job_objects_are_taken_as_douban_took_them(tmp_path, monkeypatch):
    """douban's cluster(jobs, **kw): ``jobs=`` by keyword, ``tfmesos.Job`` objects, ``protocol`` and
    ``forward_addresses``; commands in the caller's directory; a fraction of a GPU asks for a whole one."""
    import tfmesos

    monkeypatch.chdir(tmp_path)
    jobs = [tfmesos.Job("ps", 1), tfmesos.Job("worker", 2, cmd="python t.py", gpus=0.5)]
    doc, external, is_jobs_def = cluster_api.cluster_document(
        None, None, None, None, {"jobs": jobs, "protocol": "grpc", "forward_addresses": {"127.0.0.1:1"}})
    assert is_jobs_def and external == {}
    assert doc["job"]["workdir"] == str(tmp_path)
    assert doc["roles"]["worker"]["gpus"] == 1 and doc["roles"]["worker"]["command"] == "python t.py"
    assert doc["roles"]["ps"]["server"] is True
    # A workdir given in the options wins over the caller's directory.
    doc, _, _ = cluster_api.cluster_document(tfmesos.Job("ps", 1), None, {"job": {"workdir": "/srv"}}, None, {})
    assert doc["job"]["workdir"] == "/srv"
    # The roles shape keeps the sandbox (no workdir), as before.
    doc, _, is_jobs_def = cluster_api.cluster_document({"ps": 1}, None, None, None, {})
    assert not is_jobs_def and "workdir" not in doc.get("job", {})
    with pytest.raises(OptionsError, match=r"protocol: 'grpc\+verbs' is invalid: expected 'grpc'"):
        cluster_api.cluster_document(jobs, None, None, None, {"protocol": "grpc+verbs"})
    with pytest.raises(TypeError, match=r"unexpected keyword argument\(s\): bogus$"):
        cluster_api.cluster_document(jobs, None, None, None, {"bogus": 1, "protocol": "grpc"})
    with pytest.raises(OptionsError, match=r"jobs_def\[0\]\.name: 'trainer'"):  # jobs= is a jobs_def, checked as one
        tfmesos.cluster(jobs=[{"name": "trainer", "num": 1}])


def test_hosts_env_gives_douban_s_host_lists():
    from tfmesos.core.tensorflow.clusterspec import hosts_env

    assert hosts_env({"ps": ["a:1"], "worker": ["b:2", "c:3"], "chief": ["d:4"]}) == {
        "TFMESOS_PS_HOSTS": "a:1", "TFMESOS_WORKER_HOSTS": "b:2,c:3", "TFMESOS_DISTRIBUTED": "1"}
    assert hosts_env({"worker": ["b:2"]})["TFMESOS_PS_HOSTS"] == ""


def test_tfrun_takes_a_bare_C_and_a_closed_pipe_as_douban_s_did(tmp_path):
    """douban's ``-C`` took an optional value; ``--print-options | head`` ends quietly (141), no traceback."""
    import subprocess
    import sys

    assert tfrun.parser().parse_args(["-w", "1", "-s", "1", "-C", "--", "x"]).containerizer_type is None
    reader, writer = os.pipe()
    os.close(reader)  # the reader is gone before tfrun writes: as `| head -0`
    proc = subprocess.run([sys.executable, "-m", "tfmesos.client.tfrun", "-w", "1", "-s", "1", "--print-options",
                           "--", "python", "t.py"], stdout=writer, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)
    os.close(writer)
    assert (proc.returncode, proc.stderr) == (141, "")


def test_the_caller_s_address_is_found_from_every_form_of_master():
    for master in ("127.0.0.1:5050", "http://127.0.0.1:5050", "zk://127.0.0.1:2181/mesos",
                   "zoo://u:p@127.0.0.1:2181,10.0.0.2:2181/mesos", "localhost", "http://localhost:5050/"):
        assert cluster_api.reachable_host(master) == "127.0.0.1", master
    assert cluster_api.reachable_host(None) == "127.0.0.1"


def test_a_second_ctrl_c_the_kernel_gives_another_thread_is_heard_while_the_close_runs_elsewhere():
    """The first Ctrl-C closes the cluster on a thread, which holds the close for its kill grace;
    the main thread, leaving the block, waits for that close. A process-directed signal may go to
    any thread: its Python handler runs in the main thread once that runs bytecode, so the main
    thread's wait must be made of short ones (a plain lock acquire waited out the whole grace)."""
    import signal
    import sys
    import threading
    import traceback

    c = cluster_api.Cluster(None, {}, cluster_api.ClusterSettings(), out=open(os.devnull, "w"))
    heard = threading.Event()
    main = threading.main_thread()
    closing = threading.Event()
    result: dict[str, bool] = {}

    def other_close() -> None:  # the close of the first Ctrl-C, still killing: holds the lock
        with c._close_lock:
            closing.set()
            # Until the main thread is waiting in close(), then the signal to this thread.
            while "close" not in {f.f_code.co_name for f, _ in traceback.walk_stack(sys._current_frames().get(main.ident))}:
                threading.Event().wait(0.01)  # polling another thread's stack, no handshake exists
            signal.pthread_kill(threading.get_ident(), signal.SIGINT)
            result["heard while closing"] = heard.wait(10)

    previous = signal.signal(signal.SIGINT, lambda signum, frame: heard.set())
    try:
        thread = threading.Thread(target=other_close)
        thread.start()
        closing.wait(10)
        c.close()
        thread.join(10)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert result == {"heard while closing": True}, "the second Ctrl-C was heard only after the close"
    assert c._closed.is_set()
