"""A chief for the output tests, without TensorFlow: it prints its first lines and reports step 1,
waits for the file named by GATE (the test creates it once the master, or the scheduler, is
away), then prints its last lines, reports its last step and exits 0."""
import os
import sys
import time

from tfmesos import report

TOTAL = 10
for i in range(1, 4):
    print(f"before {i}", flush=True)
report(step=1, total_steps=TOTAL)
print("waiting for the gate", file=sys.stderr, flush=True)
while not os.path.exists(os.environ["GATE"]):
    time.sleep(0.1)  # the gate is a file in the test's directory: nothing to wait on but the disk
for i in range(1, 4):
    print(f"after {i}", flush=True)
report(step=TOTAL, total_steps=TOTAL)
print("final test accuracy: 1.0", flush=True)
