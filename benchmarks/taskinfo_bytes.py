"""The bytes a gang's launch puts through the master (issue 40): ``tfmesos run --dry-run --output
json`` of a job of 2 parameter servers and N workers, N = 10, 100, 1,000, through the real code
path (``client/dry_run.py``). Per size: the largest TaskInfo and all of the job's TaskInfos as the
scheduler sends them (``json.dumps``, as in the ACCEPT's body; a gang of at most 128 addresses
carries the ClusterSpec in them, deflated), and the ClusterSpec message each executor of a bigger
gang is sent once it asks (base64 of the wire form, as in a MESSAGE call's ``data``).

``python -m benchmarks.taskinfo_bytes [BASELINE_DIR]`` prints the table and writes it into
``benchmarks/results.json`` (key ``taskinfo_bytes``); BASELINE_DIR, a tree holding another
commit's ``tfmesos`` (``git archive 04cc344 tfmesos config-schema.json | tar -x -C DIR``), is
measured beside it as the before.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from tfmesos.mesos.messages import ClusterSpecMessage, encode

ROOT = Path(__file__).resolve().parents[1]
# 126: 128 addresses, the most whose TaskInfos carry the ClusterSpec (cluster_spec_sync.INLINE_MAX_ADDRESSES)
SIZES = (10, 100, 126, 1000)
BAR_1000_BYTES = 3_000_000  # issue 40: a 1,000-worker job's TaskInfos under 3 MB in all (31 MB before)


def options(workers: int) -> dict[str, Any]:
    return {"service": {"name": "pss"}, "job": {"command": "python train.py"},
            "roles": {"ps": {"count": 2, "cpus": 0.1, "mem": 64}, "worker": {"count": workers, "cpus": 0.1, "mem": 64}}}


def measure(workers: int, tree: Path = ROOT) -> dict[str, Any]:
    """One dry run of the job with ``workers`` workers, by the tfmesos under ``tree``."""
    with tempfile.TemporaryDirectory(prefix="tfmesos-taskinfo-") as tmp:
        path = Path(tmp) / "job.json"
        path.write_text(json.dumps(options(workers)))
        # --master: a cluster's run (the embedded master's fit check would refuse 1,000 tasks).
        run = subprocess.run([sys.executable, "-m", "tfmesos.client.cli", "run", str(path), "--dry-run", "--output",
                              "json", "--master", "127.0.0.1:5050"], capture_output=True, text=True, timeout=600,
                             cwd=tmp, env={**os.environ, "PYTHONPATH": str(tree)})
    if run.returncode != 0:
        raise RuntimeError(f"dry run of {workers} workers failed: {run.stderr[-2000:]}")
    document = json.loads(run.stdout)
    infos = [len(json.dumps(info)) for info in document["task_infos"]]
    row: dict[str, Any] = {"workers": workers, "tasks": len(infos), "bytes_per_taskinfo": max(infos),
                           "taskinfo_bytes": sum(infos)}
    if "cluster_spec_in_task_infos" in document:  # since a small gang's TaskInfos carry it again
        row["clusterspec_in_taskinfos"] = document["cluster_spec_in_task_infos"]
    spec = document.get("cluster_spec")
    if spec is not None:  # since protocol 4: the ClusterSpec goes to each executor once, not in the TaskInfos
        message = len(encode(ClusterSpecMessage.of(spec["version"], spec["cluster"])))
        row |= {"clusterspec_message_bytes": message, "clusterspec_messages_bytes": message * len(infos)}
    return row


def run(baseline: Path | None = None, sizes: tuple[int, ...] = SIZES) -> dict[str, Any]:
    out: dict[str, Any] = {"sizes": list(sizes), "bar_1000_bytes": BAR_1000_BYTES,
                           "this": [measure(n) for n in sizes]}
    if baseline is not None:
        out["baseline"] = [measure(n, baseline) for n in sizes]
        out["baseline_dir"] = str(baseline)
    return out


def table(result: dict[str, Any]) -> list[str]:
    lines = ["| workers | tree | bytes per TaskInfo | the job's TaskInfos | ClusterSpec message (each executor, once) |",
             "|---|---|---|---|---|"]
    for name in ("baseline", "this"):
        for row in result.get(name, ()):
            message = ("none (in every TaskInfo)" if "clusterspec_message_bytes" not in row
                       else "none (in every TaskInfo, deflated)" if row.get("clusterspec_in_taskinfos")
                       else f"{row['clusterspec_message_bytes']:,} ({row['clusterspec_messages_bytes']:,} for all)")
            lines.append(f"| {row['workers']:,} | {'before' if name == 'baseline' else 'this'} | "
                         f"{row['bytes_per_taskinfo']:,} | {row['taskinfo_bytes']:,} | {message} |")
    return lines


def main(argv: list[str]) -> int:
    result = run(Path(argv[0]) if argv else None)
    print("\n".join(table(result)))
    out = ROOT / "benchmarks" / "results.json"
    results = json.loads(out.read_text())
    results["taskinfo_bytes"] = result
    out.write_text(json.dumps(results, indent=1, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
