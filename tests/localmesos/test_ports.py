"""TFMESOS_LOCAL_PORTS: the range an embedded master picks its agents' task ports from when none is
given, so that masters side by side (a test suite's workers, two users) can be kept apart."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from localmesos.ports import ENV, HIGH, LOW, free_port_block, port_range


def test_the_range_is_the_variables_inclusive_span_or_the_default():
    assert port_range({}) == (LOW, HIGH) == (20000, 32000)
    assert port_range({ENV: ""}) == (LOW, HIGH)
    assert port_range({ENV: " 21000-21999 "}) == (21000, 22000)
    assert port_range({ENV: "65535-65535"}) == (65535, 65536)


@pytest.mark.parametrize("text", ["abc", "21000", "21000-", "-21000", "22000-21999", "80-90", "60000-70000",
                                  "21000:21999"])
def test_a_bad_range_names_the_variable_and_what_was_expected(text):
    with pytest.raises(ValueError) as info:
        port_range({ENV: text})
    assert str(info.value).startswith(f"{ENV}={text!r}: expected FIRST-LAST")


def test_a_block_is_picked_inside_the_range_and_must_fit_in_it():
    for _ in range(20):
        first = free_port_block(50, ports=(23000, 23200))
        assert 23000 <= first and first + 50 <= 23200
    with pytest.raises(ValueError, match=r"201 ports do not fit in \[23000, 23199\] \(TFMESOS_LOCAL_PORTS\)"):
        free_port_block(201, ports=(23000, 23200))


def test_local_master_takes_its_block_from_the_variable(tmp_path):
    # The user-facing path: `--first-port 0` reads the variable (the suite's xdist workers rely on it).
    # A block free now inside this worker's own slice (the suite gives each its own): a fixed range
    # may hold other masters' tasks on a shared machine.
    first = free_port_block(300)
    env = {**os.environ, ENV: f"{first}-{first + 299}"}
    proc = subprocess.Popen([sys.executable, "-m", "localmesos", "--port", "0", "--agents", "3", "--first-port", "0",
                             "--ports-per-agent", "100", "--work-dir", str(tmp_path / "w")],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        lines = [proc.stdout.readline() for _ in range(3)]  # type: ignore[union-attr]
    finally:
        proc.terminate()
        proc.wait(30)
    want = ", ".join(f"agent {i} {first + 100 * i}-{first + 100 * i + 99}" for i in range(3))
    assert f"  task ports: {want}\n" in lines, lines
    bad = subprocess.run([sys.executable, "-m", "localmesos", "--port", "0", "--first-port", "0"],
                         env={**os.environ, ENV: "24100"}, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and bad.stderr.startswith(f"tfmesos local-master: {ENV}='24100': expected FIRST-LAST")


def test_agents_listen_outside_every_agents_offered_ports():
    # 300 agents whose offered ranges cover 10000-63999 (180 ports each): the kernel's ephemeral picks
    # mostly fall inside them, so the sockets come from the walk below first_port, checked by bisection.
    from localmesos.config import MasterConfig
    from localmesos.local_master import _agent_sockets
    from localmesos.resources import normalize_ranges  # what the bisection searches

    assert normalize_ranges([(5, 9), (1, 3), (4, 4), (20, 30), (25, 26)]) == ((1, 9), (20, 30))
    config = MasterConfig(agents=300, first_port=10000, ports_per_agent=180)
    ranges = [config.agent_port_range(i) for i in range(config.agents)]
    sockets = _agent_sockets(config, 5050, [])
    try:
        ports = [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()
    assert len(set(ports)) == 300 and 5050 not in ports
    assert not [p for p in ports if any(begin <= p <= end for begin, end in ranges)]  # type: ignore[misc]
