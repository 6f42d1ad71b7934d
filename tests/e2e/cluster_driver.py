"""A driver process for tests/e2e/test_cluster_api.py: opens tfmesos.cluster() and then
leaves it by the path named on the command line (raise, or wait for SIGTERM)."""
from __future__ import annotations

import json
import sys
import threading

import tfmesos

mode = sys.argv[1]
with tfmesos.cluster({"ps": {"count": 1, "cpus": 0.3, "mem": 512}, "worker": {"count": 1, "cpus": 0.3, "mem": 512}}) as c:
    print("READY " + json.dumps({"targets": c.targets, "cluster_spec": c.cluster_spec}), flush=True)
    if mode == "raise":
        raise RuntimeError("boom inside the block")
    threading.Event().wait()  # until SIGTERM
