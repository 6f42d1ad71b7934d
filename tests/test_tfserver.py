"""The built-in server (python -m tfmesos.task.tfserver) serves without loading Keras, nor the
scikit-learn and SciPy that Keras' wrappers pull in: a server runs no model code."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The server, then what the process holds once it serves (read in the process, from the outside).
PROBE = """
import os, signal, sys, threading
from tfmesos.task import tfserver
def report():
    while "tensorflow" not in sys.modules or not hasattr(sys.modules["tensorflow"], "distribute"):
        threading.Event().wait(0.1)  # polling the import from a side thread, not synchronising a test
    print("HOLDS", sorted(m for m in ("keras", "tf_keras", "sklearn") if m in sys.modules), flush=True)
    try:
        import keras  # noqa: F401
    except ImportError as exc:
        print("REFUSED", exc, flush=True)
threading.Thread(target=report, daemon=True).start()
code = tfserver.main([])
sys.stdout.flush()
os._exit(code)
"""


def test_the_server_serves_and_keras_is_refused_in_it():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": str(ROOT),
           "TF_CONFIG": json.dumps({"cluster": {"ps": [f"127.0.0.1:{port}"]}, "task": {"type": "ps", "index": 0}})}
    proc = subprocess.Popen([sys.executable, "-c", PROBE], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, start_new_session=True)
    lines = []
    try:
        for line in proc.stdout:  # type: ignore[union-attr]
            lines.append(line.strip())
            if line.startswith("Traceback") or (any(x.startswith("REFUSED") for x in lines)
                                                 and any(" serving on " in x for x in lines)):
                break
        with socket.create_connection(("127.0.0.1", port), timeout=30):
            pass  # the gRPC server answers
        os.kill(proc.pid, signal.SIGTERM)
        assert proc.wait(60) == 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
    assert f"tfmesos.task.tfserver: ps:0 serving on 127.0.0.1:{port}" in "\n".join(lines), lines
    assert "HOLDS []" in lines, lines
    assert any(line.startswith("REFUSED keras is not loaded by a TensorFlow server") for line in lines), lines
