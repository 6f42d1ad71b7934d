"""A driver process for tests/e2e/test_cluster_api.py: opens tfmesos.cluster() and then
leaves it by the path named on the command line (raise, wait for SIGTERM), or, for
"relaunch", waits until the test has killed worker 0 and it serves again."""
from __future__ import annotations

import json
import socket
import sys
import threading

import tfmesos

mode = sys.argv[1]
relaunched = threading.Event()


def on_event(text: str) -> None:
    if text.startswith("worker:0") and "relaunch #1" in text:
        relaunched.set()


roles = {"ps": {"count": 1, "cpus": 0.3, "mem": 512}, "worker": {"count": 1, "cpus": 0.3, "mem": 512}}
with tfmesos.cluster(roles, on_event=on_event) as c:
    print("READY " + json.dumps({"targets": c.targets, "cluster_spec": c.cluster_spec}), flush=True)
    if mode == "raise":
        raise RuntimeError("boom inside the block")
    if mode == "relaunch":
        before = c.targets["/job:worker/task:0"]
        assert relaunched.wait(120), c.events
        while c.snapshot().tasks[1].state != "TASK_RUNNING" or c.snapshot().tasks[1].restarts != 1:
            assert not c.wait_finished(0.2), c.cause
        host, port = c.targets["/job:worker/task:0"].removeprefix("grpc://").rsplit(":", 1)
        while True:  # serving again (the relaunched server imports TensorFlow first)
            try:
                socket.create_connection((host, int(port)), timeout=0.5).close()
                break
            except OSError:
                assert not c.wait_finished(0.2), c.cause
        print("RELAUNCHED " + json.dumps({"before": before, "after": c.targets["/job:worker/task:0"],
                                          "events": [e for e in c.events if "relaunch" in e]}), flush=True)
    else:
        threading.Event().wait()  # until SIGTERM
