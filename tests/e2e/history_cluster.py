"""A lean tfmesos.cluster() for tests/e2e/test_history_cluster.py: one task that prints a line
and listens on its port (no TensorFlow). Inside the block it asks ``tfmesos status NAME`` (which
finds the cluster's API by the state directory's live marker) and prints the answer on one line;
then it leaves the block normally. argv: NAME STATE_DIR."""
from __future__ import annotations

import json
import subprocess
import sys

import tfmesos

name, state_dir = sys.argv[1], sys.argv[2]
LISTEN = ("import os, socket, time; s = socket.socket(); "
          "s.bind(('127.0.0.1', int(os.environ['TFMESOS_PORT']))); s.listen(); "
          "print('listening on', os.environ['TFMESOS_PORT'], flush=True); time.sleep(600)")
roles = {"worker": {"count": 1, "cpus": 0.2, "mem": 128, "command": f'"$TFMESOS_PYTHON" -c "{LISTEN}"'}}
with tfmesos.cluster(roles, name=name, options={"service": {"state_dir": state_dir}}, coordinator=False) as c:
    print("SERVING " + ",".join(c.targets.values()), flush=True)
    live = subprocess.run([sys.executable, "-m", "tfmesos.client.cli", "status", name, "--state-dir", state_dir],
                          capture_output=True, text=True, timeout=60)
    print("LIVE " + json.dumps({"code": live.returncode, "out": live.stdout + live.stderr}), flush=True)
print("LEFT", flush=True)
