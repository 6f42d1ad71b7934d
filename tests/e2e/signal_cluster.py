"""A lean tfmesos.cluster() script for tests/e2e/test_signals.py: two tasks that only listen on
their port (no TensorFlow), events shown. ``wait``: print READY, then wait for a signal;
``close``: print READY and leave the block normally; ``stubborn``: as ``wait``, with tasks that
ignore SIGTERM (so that stopping them takes the executor's grace period); ``stubborn-close``: as
``close``, with those tasks, printing CLOSING as it leaves the block."""
from __future__ import annotations

import json
import sys
import threading

import tfmesos

mode = sys.argv[1]
LISTEN = ("import os, socket, time; s = socket.socket(); "
          "s.bind(('127.0.0.1', int(os.environ['TFMESOS_PORT']))); s.listen(); time.sleep(600)")
command = f'"$TFMESOS_PYTHON" -c "{LISTEN}"'
if mode.startswith("stubborn"):
    command = f"trap '' TERM; {command}"
roles = {"worker": {"count": 2, "cpus": 0.2, "mem": 128, "command": command}}
with tfmesos.cluster(roles, quiet=False, coordinator=False) as c:
    print("READY " + json.dumps({"targets": c.targets}), flush=True)
    if mode == "stubborn-close":
        print("CLOSING", flush=True)
    elif mode != "close":
        threading.Event().wait()
print(f"LEFT cause={c.cause}", flush=True)
