"""What ``tfmesos run`` loads before its job is placed (issue 20: it starts lean).

Structural, not timed (the time is benchmarks/start_end.py's): a tiny job runs on the embedded
master, and the modules loaded when the framework is registered (the embedded master up, SUBSCRIBE
answered, no task launched yet) must not include what only other runs need: jsonschema (valid
options are checked by tfmesos/options/schema_check.py), psutil (loaded by the agent with its first
process), the fetcher's HTTP and archive modules (a job with URIs to fetch), the package commands'
templates (chevron), the other commands' modules (their flags are not built for ``run``), the
metrics' client library (loaded at the first scrape of /metrics).
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

NOT_AT_START = ("jsonschema", "attr", "attrs", "referencing", "psutil", "tarfile", "zipfile", "chevron",
                "prometheus_client", "tfmesos.client.logs", "tfmesos.client.operate", "tfmesos.package")

# The real command line, with stdout wrapped: at the "registered" line, sys.modules is written out.
_PROBE = """
import json, sys
out, real = sys.argv.pop(1), sys.stdout
class Probe:
    def write(self, text):
        if "registered as framework" in text and not getattr(self, "seen", False):
            self.seen = True
            with open(out, "w") as f:
                json.dump(sorted(sys.modules), f)
        return real.write(text)
    def __getattr__(self, name):
        return getattr(real, name)
sys.stdout = Probe()
from tfmesos.client.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _loaded_at_registration(tmp_path: Path, job: dict) -> set[str]:
    options = tmp_path / "job.json"
    options.write_text(json.dumps(job))
    seen = tmp_path / "modules.json"
    proc = subprocess.run([sys.executable, "-c", _PROBE, str(seen), "run", str(options)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return set(json.loads(seen.read_text()))


def test_a_tiny_run_registers_without_the_modules_only_other_runs_need(tmp_path: Path) -> None:
    loaded = _loaded_at_registration(tmp_path, {
        "service": {"name": "start-imports", "state_dir": str(tmp_path / "state")},
        "job": {"command": "true", "workdir": str(tmp_path)},
        "roles": {"chief": {"count": 1, "cpus": 0.1, "mem": 64}},
    })
    assert {"localmesos.local_master", "tfmesos.mesos.scheduler_driver"} <= loaded  # the probe saw the started run
    assert not [m for m in loaded if m == "pymesos" or m.startswith("pymesos.")], "the default driver is tfmesos' own"
    early = sorted(m for m in loaded if any(m == n or m.startswith(n + ".") for n in NOT_AT_START))
    assert early == [], f"loaded before the first launch: {early}"
