"""``python tools/gpu_check.py [--keep DIR]``: on a host with NVIDIA GPUs, check that a job on the
embedded master gets the host's real devices, each to one task.

CI has no GPU, so the suite checks GPUs as numbers only (offers, ``CUDA_VISIBLE_DEVICES``); this
script is the check on real cards, run by hand on a GPU host. It lists the host's GPUs
(``nvidia-smi``), then runs ``tfmesos run`` with up to two embedded agents that split them
(``--gpus-per-agent``), one GPU task per agent and one CPU task. Each task asks the CUDA driver
itself (``libcuda`` through ctypes: no TensorFlow or PyTorch needed) which devices it sees,
allocates memory on each, and writes what it found. The check passes when every GPU task sees
exactly the devices it was given (its ``gpus``), no two tasks share a device, every device is one
of the host's, and the CPU task sees none. Exit status 0 when it passes, 1 with the reason when not.
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# Run inside each task: which devices this process's CUDA driver sees, and whether each is usable.
PROBE = r'''
import ctypes, json, os, sys
out = {"visible_env": os.environ.get("CUDA_VISIBLE_DEVICES"), "uuids": [], "usable": []}
count = ctypes.c_int(0)
try:
    cuda = ctypes.CDLL("libcuda.so.1")
    rc = cuda.cuInit(0)
except OSError as e:
    rc = str(e)
if rc == 0:
    rc = cuda.cuDeviceGetCount(ctypes.byref(count))
out["init"] = rc
for ordinal in range(count.value):
    device = ctypes.c_int(0)
    cuda.cuDeviceGet(ctypes.byref(device), ordinal)
    uuid = (ctypes.c_ubyte * 16)()
    cuda.cuDeviceGetUuid(uuid, device)
    b = bytes(uuid).hex()
    out["uuids"].append("GPU-%s-%s-%s-%s-%s" % (b[:8], b[8:12], b[12:16], b[16:20], b[20:]))
    context, pointer = ctypes.c_void_p(), ctypes.c_uint64()
    ok = cuda.cuCtxCreate_v2(ctypes.byref(context), 0, device) == 0
    ok = ok and cuda.cuMemAlloc_v2(ctypes.byref(pointer), 64 << 20) == 0
    ok = ok and cuda.cuMemFree_v2(pointer) == 0 and cuda.cuCtxDestroy_v2(context) == 0
    out["usable"].append(ok)
name = "%s-%s" % (os.environ["TFMESOS_JOB_NAME"], os.environ["TFMESOS_TASK_INDEX"])
with open(os.path.join(sys.argv[1], name + ".tmp"), "w") as f:
    json.dump(out, f)
os.rename(os.path.join(sys.argv[1], name + ".tmp"), os.path.join(sys.argv[1], name + ".json"))
if name == "chief-0":  # the job ends with the chief: it waits for every report (or 120 s)
    import time
    deadline = time.time() + 120
    while time.time() < deadline and len([n for n in os.listdir(sys.argv[1]) if n.endswith(".json")]) < int(sys.argv[2]):
        time.sleep(0.1)
'''


def host_gpus() -> list[str]:
    """The host's GPU UUIDs, in nvidia-smi's index order."""
    if shutil.which("nvidia-smi") is None:
        raise SystemExit("gpu_check: no nvidia-smi on PATH: this check needs a host with NVIDIA GPUs")
    lines = subprocess.run(["nvidia-smi", "--query-gpu=uuid", "--format=csv,noheader"], check=True,
                           capture_output=True, text=True).stdout.split()
    if not lines:
        raise SystemExit("gpu_check: nvidia-smi lists no GPU")
    return lines


def check(found: dict[str, dict], given: dict[str, int], host: list[str]) -> list[str]:
    """The problems with what each task saw (empty when the check passes)."""
    problems, seen = [], {}
    for task, gpus in sorted(given.items()):
        got = found.get(task)
        if got is None:
            problems.append(f"{task}: wrote nothing")
            continue
        uuids = got["uuids"]
        if len(uuids) != gpus:
            problems.append(f"{task}: given {gpus} GPU(s), sees {len(uuids)} "
                            f"(CUDA_VISIBLE_DEVICES={got['visible_env']!r}, cuInit {got['init']})")
        if not all(got["usable"]):
            problems.append(f"{task}: a device it sees could not allocate memory: {got['usable']}")
        for uuid in uuids:
            if uuid not in host:
                problems.append(f"{task}: sees {uuid}, which nvidia-smi does not list")
            if uuid in seen:
                problems.append(f"{task}: shares {uuid} with {seen[uuid]}")
            seen[uuid] = task
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", type=Path, help="keep the options, the tasks' reports and the run's output here")
    args = parser.parse_args(argv)
    host = host_gpus()
    agents = 2 if len(host) >= 2 else 1
    per_agent = len(host) // agents
    work = args.keep or Path(tempfile.mkdtemp(prefix="tfmesos-gpu-check-"))
    reports = work / "reports"
    reports.mkdir(parents=True, exist_ok=True)
    (work / "probe.py").write_text(PROBE)
    command = f'"$TFMESOS_PYTHON" {work / "probe.py"} {reports} {agents + 1}'
    options = {
        "service": {"name": "gpu-check", "state_dir": str(work / "state")},
        "job": {"command": command, "workdir": str(work)},
        # One GPU task per embedded agent, each wanting all of that agent's GPUs, and one CPU task.
        "roles": {"chief": {"count": 1, "cpus": 0.1, "mem": 64},
                  "worker": {"count": agents, "cpus": 0.1, "mem": 64, "gpus": per_agent}},
    }
    (work / "options.json").write_text(json.dumps(options, indent=2))
    run = subprocess.run([sys.executable, "-m", "tfmesos.client.cli", "run", str(work / "options.json"), "--agents", str(agents),
                          "--gpus-per-agent", str(per_agent)], capture_output=True, text=True, timeout=300)
    (work / "run.log").write_text(run.stdout + run.stderr)
    print(f"host GPUs ({len(host)}): {', '.join(host)}")
    print(f"embedded agents: {agents}, {per_agent} GPU(s) each; tfmesos run exit {run.returncode}")
    found = {p.stem: json.loads(p.read_text()) for p in reports.glob("*.json")}
    for task, got in sorted(found.items()):
        print(f"  {task}: CUDA_VISIBLE_DEVICES={got['visible_env']!r} sees {got['uuids']} usable {got['usable']}")
    given = {"chief-0": 0, **{f"worker-{i}": per_agent for i in range(agents)}}
    problems = check(found, given, host) + ([f"tfmesos run exited {run.returncode}: {run.stdout[-2000:]}"
                                             f"{run.stderr[-2000:]}"] if run.returncode else [])
    for problem in problems:
        print(f"FAIL {problem}")
    if not problems:
        print("OK: every GPU task saw its own devices, the CPU task none")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
