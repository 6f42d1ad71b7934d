"""The notice as a task reads it (tfmesos/task/notice.py): the document, its atomic write, the
variables a task gets, SIGTERM as a request to save, and the planned exit. Signals and exits are
tried in a child Python, never in the test's own process."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from tests.test_import_boundaries import GRAPH, broken
from tfmesos.task import notice as module
from tfmesos.task.notice import Notice, NoticeError, parse

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def nothing_seen(monkeypatch):
    monkeypatch.setattr(module, "_found", None)
    monkeypatch.delenv(module.NOTICE_ENV, raising=False)


def test_a_notice_written_is_read_back_whole_and_nothing_is_left_beside_it(tmp_path: Path) -> None:
    path = str(tmp_path / "notice.json")
    sent = Notice("agent 10.0.0.3 draining", "drain", 1_700_000_060.5)
    module.write(path, sent)
    assert module.notice(path) == sent
    assert json.loads(Path(path).read_text()) == {"v": 1, "reason": "agent 10.0.0.3 draining", "kind": "drain",
                                                   "deadline": 1_700_000_060.5}
    assert os.listdir(tmp_path) == ["notice.json"]
    assert sent.seconds_left(now=1_700_000_000.5) == 60.0 and Notice("x", "update").seconds_left() is None


@pytest.mark.parametrize(("text", "field"), [
    ("{", "not JSON"),
    ("[]", "expected a JSON object"),
    ('{"v": 2, "reason": "r", "kind": "drain", "deadline": null}', "v: expected 1"),
    ('{"v": 1, "reason": "", "kind": "drain", "deadline": null}', "reason: expected a non-empty string"),
    ('{"v": 1, "reason": "r", "kind": "evict", "deadline": null}', "kind: expected one of drain, maintenance"),
    ('{"v": 1, "reason": "r", "kind": "drain", "deadline": "soon"}', "deadline: expected unix seconds or null"),
    ('{"v": 1, "reason": "r", "kind": "drain", "deadline": true}', "deadline: expected unix seconds or null"),
])
def test_a_document_off_the_contract_is_refused_naming_the_field(text: str, field: str) -> None:
    with pytest.raises(NoticeError, match=field):
        parse(text)


def test_every_kind_of_the_contract_parses() -> None:
    for kind in module.KINDS:
        assert parse(json.dumps({"v": 1, "reason": "r", "kind": kind, "deadline": 5})) == Notice("r", kind, 5.0)


def test_no_file_is_no_notice_and_a_garbled_one_is_still_a_stop(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "notice.json"
    assert module.notice() is None  # outside tfmesos
    monkeypatch.setenv(module.NOTICE_ENV, str(path))
    assert module.notice() is None and not module.stop_requested()
    path.write_text("{half")
    found = module.notice()
    assert found is not None and found.kind == "unknown" and "not JSON" in found.reason and str(path) in found.reason
    assert module.stop_requested()
    path.unlink()  # once seen, a notice stays for the rest of the task's life
    assert module.notice() == found


def test_a_task_gets_the_notice_file_and_a_closed_metadata_address_unless_the_job_sets_them() -> None:
    assert module.task_env("/sandbox/notice.json", {}) == {
        "TFMESOS_NOTICE_FILE": "/sandbox/notice.json", "GCE_METADATA_IP": "127.0.0.1:0"}
    assert module.task_env("/sandbox/notice.json", {"GCE_METADATA_IP": "169.254.169.254"}) == {
        "TFMESOS_NOTICE_FILE": "/sandbox/notice.json"}
    assert module.PLANNED_EXIT == 42


def test_sigterm_cannot_be_watched_off_the_main_thread() -> None:
    answers: list[bool] = []
    thread = threading.Thread(target=lambda: answers.append(module.watch_sigterm()))
    thread.start()
    thread.join()
    assert answers == [False] and module.sigterm_received() is None


def _child(source: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(source)], capture_output=True, text=True,
                          timeout=60, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})


def test_a_watched_sigterm_is_recorded_the_script_goes_on_and_an_earlier_handler_hears_it_too() -> None:
    done = _child("""
        import os, signal
        import tfmesos
        heard = []
        signal.signal(signal.SIGTERM, lambda signum, frame: heard.append(signum))
        assert not tfmesos.stop_requested()
        assert tfmesos.watch_sigterm() and tfmesos.watch_sigterm()  # twice: once installed
        os.kill(os.getpid(), signal.SIGTERM)
        os.kill(os.getpid(), signal.SIGTERM)
        from tfmesos.task.notice import sigterm_received, describe
        print(tfmesos.stop_requested(), sigterm_received() is not None, heard == [signal.SIGTERM] * 2, describe())
        """)
    assert (done.returncode, done.stdout.split()) == (0, ["True", "True", "True", "SIGTERM"]), done.stderr


def test_an_unwatched_sigterm_still_ends_the_script() -> None:
    done = _child("import os, signal, tfmesos; os.kill(os.getpid(), signal.SIGTERM); print('survived')")
    assert done.returncode == -15 and "survived" not in done.stdout


def test_the_planned_exit_says_why_runs_the_scripts_cleanup_and_exits_42(tmp_path: Path) -> None:
    path = tmp_path / "notice.json"
    module.write(str(path), Notice("agent 10.0.0.3 draining", "drain", None))
    done = _child("""
        import atexit, tfmesos
        atexit.register(print, "cleaned up")
        try:
            if tfmesos.stop_requested():
                tfmesos.exit_planned("saved at step 7")
        finally:
            print("finally ran")
        print("not reached")
        """, {module.NOTICE_ENV: str(path)})
    assert done.returncode == module.PLANNED_EXIT, done.stderr
    assert done.stdout.split("\n")[:2] == ["finally ran", "cleaned up"] and "not reached" not in done.stdout
    assert "tfmesos: planned stop (agent 10.0.0.3 draining): saved at step 7; exiting 42" in done.stderr


def test_the_notice_module_imports_the_standard_library_only_and_nothing_of_tfmesos() -> None:
    own = broken(GRAPH, "tfmesos.task.notice", lambda n: n not in ("tfmesos.task.notice", "tfmesos", "tfmesos.task"),
                 lambda x: x.split(".")[0] in sys.stdlib_module_names or x == "tensorflow")
    assert own == []  # TensorFlow only inside termination_config, for scripts that have it
