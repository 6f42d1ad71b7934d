"""README.md's shell recipes run as a reader would run them, so a recipe that fails cannot stay there.

Every ```sh block carries a marker on the line before it: ``<!-- recipe: run -->`` (run here, against
the embedded master) or ``<!-- recipe: not run here: WHY -->`` (it needs a cluster, DC/OS, a running
job, or it is the quick start that CI runs). A block without a marker fails the first test.

A runnable block runs with ``bash -e -o pipefail`` from the repository root, in a session of its own,
with only the ``tfmesos`` and ``tfrun`` commands on PATH beside /usr/bin:/bin (as `pip install --user`
or pipx would leave them: plain `python` is not the venv's), a HOME and TMPDIR of its own, and the
port 5050 of the text replaced by a free one. It must exit 0 and leave no process behind.
"""
from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

ROOT = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"<!-- recipe: (run|not run here: .+) -->")
BLOCK = re.compile(r"^```sh\n(.*?)^```", re.MULTILINE | re.DOTALL)


def readme_blocks() -> list[tuple[int, str, str]]:
    """(line, marker or '', text) of every ```sh block of README.md."""
    text = (ROOT / "README.md").read_text()
    out = []
    for m in BLOCK.finditer(text):
        before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        found = MARKER.fullmatch(before.strip())
        out.append((text.count("\n", 0, m.start()) + 1, found.group(1) if found else "", m.group(1)))
    return out


RUNNABLE = [(line, body) for line, marker, body in readme_blocks() if marker == "run"]


def test_every_shell_block_says_whether_it_runs_here():
    unmarked = [line for line, marker, _ in readme_blocks() if not marker]
    assert not unmarked, f"README.md lines {unmarked}: put <!-- recipe: run --> or <!-- recipe: not run here: WHY --> before each ```sh block"
    assert len(RUNNABLE) >= 4  # the PATH, shared-master, plain-python and tfrun recipes


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _left_behind(session: int) -> list[psutil.Process]:
    out = []
    for p in psutil.process_iter(["pid"]):
        try:
            if os.getsid(p.pid) == session:
                out.append(p)
        except (ProcessLookupError, PermissionError):
            continue
    return out


@pytest.mark.parametrize("line,body", RUNNABLE, ids=[f"README.md:{line}" for line, _ in RUNNABLE])
def test_readme_recipe_runs(tmp_path, line, body):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    venv_bin = Path(sys.executable).parent
    for command in ("tfmesos", "tfrun"):
        assert (venv_bin / command).exists(), f"{venv_bin / command}: the set-up installs it"
        (bin_dir / command).symlink_to(venv_bin / command)
    for name in ("home", "tmp"):
        (tmp_path / name).mkdir()
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path / "home"), "TMPDIR": str(tmp_path / "tmp"),
           "LANG": "C.UTF-8"}
    script = body.replace("5050", str(_free_port()))
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
    assert proc.returncode == 0, f"README.md:{line} exited {proc.returncode}:\n{output[-6000:]}"
    assert not left, f"README.md:{line} left processes behind: {[p.pid for p in left]}"
