"""A lean tfmesos.cluster() for tests/e2e/test_history_cluster.py: one task that prints a line
and listens on its port (no TensorFlow); the block is left normally once it serves.
argv: NAME STATE_DIR."""
from __future__ import annotations

import sys

import tfmesos

name, state_dir = sys.argv[1], sys.argv[2]
LISTEN = ("import os, socket, time; s = socket.socket(); "
          "s.bind(('127.0.0.1', int(os.environ['TFMESOS_PORT']))); s.listen(); "
          "print('listening on', os.environ['TFMESOS_PORT'], flush=True); time.sleep(600)")
roles = {"worker": {"count": 1, "cpus": 0.2, "mem": 128, "command": f'"$TFMESOS_PYTHON" -c "{LISTEN}"'}}
with tfmesos.cluster(roles, name=name, options={"service": {"state_dir": state_dir}}, coordinator=False) as c:
    print("SERVING " + ",".join(c.targets.values()), flush=True)
print("LEFT", flush=True)
