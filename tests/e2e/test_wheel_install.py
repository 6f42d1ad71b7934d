"""The package as a user gets it: ``python -m build`` makes the sdist and, from it, the wheel; the
wheel carries the executor, the embedded master, the status page's files and the options schema;
installed with its ``tensorflow`` extra into an empty venv (pip alone: no helper script, no
pymesos), its ``tfmesos run`` trains the Keras MultiWorkerMirrored example to SUCCEEDED on the
embedded master, from a folder outside the clone, with the assertions of that example's own test
(accuracy, KerasProgress' progress and loss series on /v1/status, the model saved by worker 0,
BackupAndRestore's backup cleared): one run of the example serves both. One test: it installs
TensorFlow (pip's cache makes that minutes, not a download)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from tests.e2e.harness import LineProcess, accuracy, stop_scheduler, task_processes, wait_gone, write_options
from tests.e2e.test_history import get

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
IN_THE_WHEEL = ("tfmesos/executor/__main__.py", "tfmesos/mesos/scheduler_driver.py", "localmesos/local_master.py",
                "localmesos/master/master.py", "localmesos/agent/forkserver.py", "tfmesos/scheduler/web/index.html",
                "tfmesos/scheduler/web/app.js", "tfmesos/config-schema.json",
                "tfmesos/package/universe/marathon.json.mustache")


def _tracked_copy(dest: Path) -> Path:
    """The clone's tracked files (what a fresh clone has), without the venv or build leftovers."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout.split(b"\0")
    for name in filter(None, (f.decode() for f in files)):
        source, target = ROOT / name, dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():  # tfmesos/package/universe -> universe-package
            os.symlink(os.readlink(source), target)
        elif source.is_file():
            shutil.copy2(source, target)
    return dest


def test_the_wheel_installs_into_an_empty_venv_and_runs_the_keras_mwms_example(tmp_path: Path) -> None:
    src = _tracked_copy(tmp_path / "src")
    built = subprocess.run([sys.executable, "-m", "build", "--outdir", str(tmp_path / "dist"), str(src)],
                           capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    (wheel,) = (tmp_path / "dist").glob("tfmesos-*-py3-none-any.whl")
    (sdist,) = (tmp_path / "dist").glob("tfmesos-*.tar.gz")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert not [n for n in IN_THE_WHEEL if n not in names], sorted(names)[:50]
    assert not [n for n in names if "__pycache__" in n or n.startswith("tests/")]
    with tarfile.open(sdist) as tar:
        assert any(n.endswith("/localmesos/local_master.py") for n in tar.getnames())

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    installed = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check",
                                f"{wheel}[tensorflow]"], capture_output=True, text=True, timeout=1500, env=env)
    assert installed.returncode == 0, installed.stdout[-3000:] + installed.stderr[-3000:]
    listed = subprocess.run([str(venv / "bin" / "pip"), "list", "--format=freeze"], capture_output=True, text=True,
                            env=env).stdout.lower()
    assert "tf_keras==" in listed.replace("-", "_") and "tensorflow==" in listed and "pymesos" not in listed, listed

    work = tmp_path / "elsewhere"  # no clone on the path: the venv's tfmesos, its own Python for the tasks
    work.mkdir()
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import tfmesos, localmesos; "
                            "print(tfmesos.__file__); print(localmesos.__file__)"],
                           cwd=work, capture_output=True, text=True, env=env, timeout=60).stdout.split()
    assert len(where) == 2 and all(p.startswith(str(venv)) for p in where), where
    # Under a name of its own: what is left of a job is found by its name, and other tests run
    # examples beside it (pytest-xdist).
    name, ckpt = "wheel-keras-mwms", tmp_path / "ckpt"
    options = write_options(tmp_path / "options.json", ROOT / "examples/keras_mwms_digits/options.json",
                            service={"name": name}, job={"checkpoint_dir": str(ckpt)})
    tfmesos = str(venv / "bin" / "tfmesos")
    run = LineProcess([tfmesos, "run", str(options), "--state-dir", str(tmp_path / "state"), "--keep-serving", "120"],
                      env=env, cwd=work)
    try:
        api = run.wait_for(r"status page on http://(\S+)/", 120).group(1)
        run.wait_for(rf"job {name} (SUCCEEDED|FAILED)", 600)
        assert f"job {name} SUCCEEDED" in run.output, run.output[-4000:]
        run.wait_for(r"status page stays on http://\S+/ for 120 s", 60)  # served on: a kill from now on ends that
        status = json.loads(get(api, "/v1/status"))
        # KerasProgress: epochs x steps_per_epoch, the last epoch's loss and metrics, a loss chart.
        assert status["progress"]["step"] == status["progress"]["total_steps"] == 200, status["progress"]
        assert status["progress"]["epoch"] == 10 and status["progress"]["accuracy"] > 0.9, status["progress"]
        assert len([p for p in status["series"] if p[2] is not None]) >= 3, status["series"]
        # The wheel's own command ends the serving early; the run's code is still the job's.
        killed = subprocess.run([tfmesos, "kill", "--api", api, "--state-dir", str(tmp_path / "state")],
                                cwd=work, capture_output=True, text=True, env=env, timeout=120)
        assert killed.returncode == 0, killed.stdout + killed.stderr
        assert run.wait(60) == 0, run.output[-4000:]
    finally:
        stop_scheduler(run)
        for proc in task_processes(name):
            proc.kill()
    assert accuracy(run.output) >= 0.9
    assert (ckpt / "model.keras").is_file(), "worker 0 saved the model"
    assert not (ckpt / "backup").exists() or not any((ckpt / "backup").iterdir()), "BackupAndRestore cleared its backup"
    assert not wait_gone(name)
