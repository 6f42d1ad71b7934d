"""Write tests/durations.json, the order of `make test` side by side (tests/side_by_side.py: the
longest first), from the output of a measured run:

    make test PYTEST_ARGS=--durations=0 | tee /tmp/run.txt
    .venv/bin/python tools/test_durations.py /tmp/run.txt

and likewise the real-Mesos suite's (`make test-real-mesos ...`, then `--out
tests/durations-real-mesos.json`). Node ids are written without the `@GROUP` suffix that
`--dist loadgroup` gives an xdist_group's tests (the order is decided before it is added).

With the CPU seconds of each test too (what makes a test heavy for `make test`'s scheduler,
tests/side_by_side.py), from the same run:

    TFMESOS_TEST_CPU=/tmp/cpu.tsv make test PYTEST_ARGS=--durations=0 | tee /tmp/run.txt
    .venv/bin/python tools/test_durations.py /tmp/run.txt --cpu /tmp/cpu.tsv

Each test's seconds are its setup, call and teardown together, as pytest's --durations lists them;
tests under MIN_SECONDS are left out (they are ordered by what they start).
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.side_by_side import plain_nodeid  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "durations.json"
LINE = re.compile(r"^([0-9.]+)s (setup|call|teardown) +(\S.*)$")  # a parameter's id may hold spaces
MIN_SECONDS = 2.0


def durations(lines: list[str]) -> dict[str, float]:
    """nodeid -> seconds (setup + call + teardown) from pytest's --durations lines."""
    seconds: dict[str, float] = defaultdict(float)
    for line in lines:
        m = LINE.match(line.strip())
        if m:
            seconds[plain_nodeid(m.group(3))] += float(m.group(1))
    return dict(seconds)


def cpu_seconds(lines: list[str]) -> dict[str, float]:
    """nodeid -> CPU seconds from the lines TFMESOS_TEST_CPU collects ("SECONDS<TAB>NODEID<TAB>...")."""
    found: dict[str, float] = {}
    for line in lines:
        fields = line.rstrip("\n").split("\t")
        if len(fields) >= 2:
            found[plain_nodeid(fields[1])] = float(fields[0])
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("output", type=Path, help="the saved output of a run with --durations=0")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--cpu", type=Path, help="the TFMESOS_TEST_CPU file of the same run")
    args = parser.parse_args(argv)
    found = durations(args.output.read_text(errors="replace").splitlines())
    if not found:
        print(f"{args.output}: no --durations lines (run with PYTEST_ARGS=--durations=0)", file=sys.stderr)
        return 1
    kept = {k: round(v, 1) for k, v in sorted(found.items(), key=lambda kv: -kv[1]) if v >= MIN_SECONDS}
    how = "`make test-real-mesos`" if args.out.name == "durations-real-mesos.json" else "`make test`"
    record: dict = {"how": f"seconds per test in a {how} run (tools/test_durations.py)", "seconds": kept}
    if args.cpu:
        cpu = cpu_seconds(args.cpu.read_text().splitlines())
        record["cpu_seconds"] = {k: round(v, 1) for k, v in sorted(cpu.items(), key=lambda kv: -kv[1])
                                 if v >= MIN_SECONDS}
        record["how"] += ", and the CPU seconds of each (its processes' included)"
    args.out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"{args.out}: {len(kept)} tests of {MIN_SECONDS} s or more, of {len(found)} timed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
