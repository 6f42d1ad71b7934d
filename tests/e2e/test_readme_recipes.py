"""The shell recipes of README.md and of every page under docs/ run as a reader would run them, so a
recipe that fails cannot stay there.

Every ```sh block carries a marker on the line before it: ``<!-- recipe: run -->`` (run here, against
the embedded master) or ``<!-- recipe: not run here: WHY -->`` (it needs a cluster, DC/OS, a running
job, or it is the quick start that CI runs). A block without a marker fails the first test, and so does
a shell block fenced as ```bash, ```shell or ```console, which would escape the marker check.

A runnable block runs with ``bash -e -o pipefail`` from the repository root, in a session of its own,
with only the ``tfmesos`` and ``tfrun`` commands on PATH beside /usr/bin:/bin (as `pip install --user`
or pipx would leave them: plain `python` is not the venv's), a HOME and TMPDIR of its own, the
port 5050 of the text replaced by a free one, and the suite's TFMESOS_LOCAL_PORTS (where embedded
masters pick task ports: each xdist worker has its own, tests/conftest.py). It must exit 0 and
leave no process behind.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from tests.e2e.harness import free_port

ROOT = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"<!-- recipe: (run|not run here: .+) -->")
BLOCK = re.compile(r"^```sh\n(.*?)^```", re.MULTILINE | re.DOTALL)
OTHER_SHELL = re.compile(r"^```(bash|shell|console|zsh)\b", re.MULTILINE)


def pages() -> list[Path]:
    """README.md and every page of the docs site."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def recipe_blocks() -> list[tuple[str, str, str]]:
    """(page:line, marker or '', text) of every ```sh block of README.md and docs/."""
    out = []
    for page in pages():
        text = page.read_text()
        for m in BLOCK.finditer(text):
            before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
            found = MARKER.fullmatch(before.strip())
            where = f"{page.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}"
            out.append((where, found.group(1) if found else "", m.group(1)))
    return out


RUNNABLE = [(where, body) for where, marker, body in recipe_blocks() if marker == "run"]


def test_every_shell_block_says_whether_it_runs_here():
    unmarked = [where for where, marker, _ in recipe_blocks() if not marker]
    assert not unmarked, f"{unmarked}: put <!-- recipe: run --> or <!-- recipe: not run here: WHY --> before each ```sh block"
    other = [f"{page.relative_to(ROOT)}:{page.read_text().count(chr(10), 0, m.start()) + 1}"
             for page in pages() for m in OTHER_SHELL.finditer(page.read_text())]
    assert not other, f"{other}: fence shell recipes as ```sh, so that the marker check sees them"
    runnable_pages = {where.split(":")[0] for where, _ in RUNNABLE}
    # the PATH and first-job recipes, the kept-record one, the shared master, plain python, tfrun
    assert {"README.md", "docs/commands.md", "docs/embedded-master.md", "docs/coming-from-douban.md"} <= runnable_pages
    assert len(RUNNABLE) >= 6


def _left_behind(session: int) -> list[psutil.Process]:
    out = []
    for p in psutil.process_iter(["pid"]):
        try:
            if os.getsid(p.pid) == session:
                out.append(p)
        except (ProcessLookupError, PermissionError):
            continue
    return out


@pytest.mark.parametrize("where,body", RUNNABLE, ids=[where for where, _ in RUNNABLE])
def test_recipe_runs(tmp_path, where, body):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    venv_bin = Path(sys.executable).parent
    for command in ("tfmesos", "tfrun"):
        assert (venv_bin / command).exists(), f"{venv_bin / command}: the set-up installs it"
        (bin_dir / command).symlink_to(venv_bin / command)
    for name in ("home", "tmp"):
        (tmp_path / name).mkdir()
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path / "home"), "TMPDIR": str(tmp_path / "tmp"),
           "LANG": "C.UTF-8", "TFMESOS_LOCAL_PORTS": os.environ["TFMESOS_LOCAL_PORTS"]}  # this worker's ports
    script = body.replace("5050", str(free_port()))
    proc = subprocess.Popen(["bash", "-e", "-o", "pipefail", "-c", script], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        output, _ = proc.communicate(timeout=420)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
    # Processes the recipe stopped may take a moment to exit: wait for them, then kill what stays.
    _, left = psutil.wait_procs(_left_behind(proc.pid), timeout=30)
    for p in left:
        p.kill()
    assert proc.returncode == 0, f"{where} exited {proc.returncode}:\n{output[-6000:]}"
    assert not left, f"{where} left processes behind: {[p.pid for p in left]}"
