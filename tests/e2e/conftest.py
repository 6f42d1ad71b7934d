"""The real-Apache-Mesos variants (test_*real_mesos*.py) run only when asked for (TFMESOS_REAL_MESOS
names the folder of the real-mesos scripts): without it they are not collected at all, rather than skipped."""
import os
from pathlib import Path

collect_ignore = [] if os.environ.get("TFMESOS_REAL_MESOS") else [
    p.name for p in Path(__file__).parent.glob("test_*real_mesos*.py")]
