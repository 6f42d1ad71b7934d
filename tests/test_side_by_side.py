"""The suite side by side (pytest-xdist): each worker's embedded masters and real-Mesos clusters get
ports of their own, a serial test runs alone, and the heaviest tests go first."""
from __future__ import annotations

import threading
from pathlib import Path

import pytest

from localmesos.ports import ENV, port_range
from tests import side_by_side
from tests.conftest import SUITE_TASK_PORTS, pip_settings, worker_task_ports


def test_each_worker_gets_a_disjoint_slice_of_the_suites_task_ports():
    for count in (1, 2, 3, 4, 8):
        slices = [port_range({ENV: worker_task_ports((i, count))}) for i in range(count)]
        assert slices[0][0] == SUITE_TASK_PORTS[0] and slices[-1][1] <= SUITE_TASK_PORTS[1]
        assert all(a[1] <= b[0] for a, b in zip(slices, slices[1:])), slices
        assert all(high - low >= 1000 for low, high in slices), "room for a 5-agent master and its neighbours"
    assert worker_task_ports(None) == worker_task_ports((0, 1)) == "20000-30999"


def test_the_real_mesos_agents_of_each_worker_move_to_ports_of_its_own(monkeypatch):
    from tests.e2e import real_mesos

    monkeypatch.setattr(real_mesos, "WORKER", None)
    written = "cpus:1;ports:[31000-31999]"
    assert real_mesos.worker_ports(written) == written, "a serial run keeps the ports the tests write"
    monkeypatch.setattr(real_mesos, "WORKERS", 3)
    seen = []
    for worker in range(3):
        monkeypatch.setattr(real_mesos, "WORKER", worker)
        for agent in (1, 2, 3):
            moved = real_mesos.worker_ports(f"cpus(a):1;ports(a):[3{agent}000-3{agent}999];disk:1")
            first, last = (int(p) for p in moved.split("[")[1].split("]")[0].split("-"))
            assert moved.startswith("cpus(a):1;ports(a):[") and moved.endswith("];disk:1")
            seen.append((first, last))
    seen.sort()
    assert all(a[1] < b[0] for a, b in zip(seen, seen[1:])), seen
    assert 10000 <= seen[0][0] and seen[-1][1] < 20000, "below the embedded masters' ports"


def _marked(*marks: pytest.MarkDecorator, nodeid: str = "t.py::x") -> pytest.Item:
    class Item:
        def __init__(self) -> None:
            self.marks = [m.mark for m in marks]
            self.nodeid = nodeid

        def get_closest_marker(self, name: str):
            return next((m for m in self.marks if m.name == name), None)

    return Item()  # type: ignore[return-value]


def test_a_serial_test_or_an_xdist_group_must_say_why():
    assert side_by_side.reason_missing(_marked(pytest.mark.serial("times a ping"))) is None
    assert "serial without a reason" in side_by_side.reason_missing(_marked(pytest.mark.serial()))
    assert side_by_side.reason_missing(_marked(pytest.mark.xdist_group("x", reason="one cluster"))) is None
    assert "xdist_group('x') without reason" in side_by_side.reason_missing(_marked(pytest.mark.xdist_group("x")))


def test_serial_first_then_the_longest_as_measured_else_by_what_they_start():
    unit, protocol, slow = _marked(pytest.mark.unit), _marked(pytest.mark.protocol), \
        _marked(pytest.mark.protocol, pytest.mark.slow)
    job, serial = _marked(pytest.mark.e2e), _marked(pytest.mark.protocol, pytest.mark.serial("x"))
    measured_job = _marked(pytest.mark.e2e, nodeid="t.py::measured")
    measured_protocol = _marked(pytest.mark.protocol, nodeid="t.py::slow_protocol")
    measured = {"t.py::measured": 200.0, "t.py::slow_protocol": 50.0}
    items = [unit, protocol, slow, measured_protocol, job, serial, measured_job]
    ordered = sorted(items, key=lambda i: side_by_side.order(i, measured))
    assert ordered == [serial, measured_job, measured_protocol, job, slow, protocol, unit]


def test_an_xdist_group_is_ordered_as_one_unit_of_its_total():
    group = pytest.mark.xdist_group("images", reason="one cluster")
    first, second = _marked(pytest.mark.e2e, group, nodeid="i.py::a"), _marked(pytest.mark.e2e, group, nodeid="i.py::b")
    long, short = _marked(pytest.mark.e2e, nodeid="t.py::long"), _marked(pytest.mark.e2e, nodeid="t.py::short")
    measured = {"i.py::a": 50.0, "i.py::b": 100.0, "t.py::long": 120.0, "t.py::short": 10.0}
    items = [short, first, long, second]
    groups = side_by_side.group_seconds(items, measured)
    assert groups == {"images": 150.0}
    ordered = sorted(items, key=lambda i: side_by_side.order(i, measured, groups))
    assert ordered == [first, second, long, short], "the group's 150 s before the 120 s test, in its own order"


def test_measured_seconds_are_read_without_xdists_group_suffix(tmp_path: Path):
    path = tmp_path / "d.json"
    path.write_text('{"seconds": {"i.py::a@images": 5.0, "t.py::b[x@y]": 6.0, "t.py::c": 7.0}}')
    assert side_by_side.measured_seconds(path) == {"i.py::a": 5.0, "t.py::b[x@y]": 6.0, "t.py::c": 7.0}


def test_the_measured_durations_name_tests_that_exist():
    measured = side_by_side.measured_seconds()
    assert len(measured) >= 20 and all(s > 0 for s in measured.values())
    root = Path(__file__).resolve().parents[1]
    gone = [nodeid for nodeid in measured if not (root / nodeid.split("::")[0]).is_file()]
    assert not gone, f"{gone}: not in the suite any more; refresh tests/durations*.json (tools/test_durations.py)"
    cpu = side_by_side.measured_seconds(side_by_side.DURATIONS, key="cpu_seconds")
    assert len([s for s in cpu.values() if s >= side_by_side.HEAVY_CPU_S]) >= 20, "the heavy tests are measured"
    gone = [nodeid for nodeid in cpu if not (root / nodeid.split("::")[0]).is_file()]
    assert not gone, f"{gone}: not in the suite any more; refresh tests/durations.json (tools/test_durations.py --cpu)"
    real = side_by_side.measured_seconds(side_by_side.REAL_MESOS_DURATIONS)
    assert real and all("real_mesos" in nodeid for nodeid in real), "the real-Mesos suite's own file"


def test_a_serial_test_waits_for_the_running_ones_and_keeps_new_ones_out(tmp_path: Path):
    # Each SessionLock opens the files anew, as each worker process does: flock sees them apart.
    first, serial, later = (side_by_side.SessionLock(tmp_path) for _ in range(3))
    events: list[str] = []
    done = threading.Event()

    def run_serial() -> None:
        with serial.alone():
            events.append("serial")
        done.set()

    def run_later() -> None:
        with later.beside():
            events.append("later")

    with first.beside():
        alone = threading.Thread(target=run_serial)
        alone.start()
        # The serial test is waiting for this one: a test that starts now waits behind it.
        assert not done.wait(0.3)
        behind = threading.Thread(target=run_later)
        behind.start()
        assert not done.wait(0.3) and events == []
        events.append("first")
    alone.join(10)
    behind.join(10)
    assert events == ["first", "serial", "later"]


def test_a_job_process_is_this_runs_by_its_sandbox(tmp_path: Path):
    from tests.e2e import harness

    assert harness.RUN_ROOT and str(tmp_path).startswith(harness.RUN_ROOT + "/"), "tmp_path is in the run's folder"
    assert harness.this_runs({"MESOS_SANDBOX": str(tmp_path)})
    assert not harness.this_runs({"MESOS_SANDBOX": "/tmp"}), "a sandbox elsewhere on this machine: another run's"
    assert harness.this_runs({"MESOS_SANDBOX": "/mnt/mesos/sandbox/no-such-folder-here"}), "a container's path"
    assert harness.this_runs({}), "no sandbox (tfrun's worker 0 runs here): by its name alone"


def test_pip_keeps_the_users_config_and_cache_under_the_suites_home(tmp_path: Path):
    home = tmp_path / "home"
    assert pip_settings(home, {}) == {"PIP_CACHE_DIR": str(home / ".cache" / "pip")}, "no config: none named"
    (home / ".config" / "pip").mkdir(parents=True)
    (home / ".config" / "pip" / "pip.conf").write_text("[global]\nindex-url = file:///mirror\n")
    assert pip_settings(home, {}) == {"PIP_CONFIG_FILE": str(home / ".config" / "pip" / "pip.conf"),
                                      "PIP_CACHE_DIR": str(home / ".cache" / "pip")}
    assert pip_settings(home, {"PIP_CONFIG_FILE": "/etc/mine.conf", "XDG_CACHE_HOME": "/c"}) == \
        {"PIP_CACHE_DIR": "/c/pip"}, "what the user set is kept"


def test_the_cpu_seconds_a_run_collects_are_read_by_node_id_without_the_group_suffix():
    from tools.test_durations import cpu_seconds

    lines = ["31.90\tt.py::a@images\t1795974000.10\t1795974040.20\tgw0\n", "0.02\tt.py::b[x@y]\t1.0\t1.1\tgw1",
             "not a record"]
    assert cpu_seconds(lines) == {"t.py::a": 31.9, "t.py::b[x@y]": 0.02}


def test_a_worker_takes_the_first_unit_unless_it_would_be_one_heavy_too_many():
    queue = [("h1", True), ("h2", True), ("l1", False), ("l2", False)]
    assert side_by_side.pick_unit(queue, heavy_elsewhere=0, at_once=2) == "h1"
    assert side_by_side.pick_unit(queue, heavy_elsewhere=1, at_once=2) == "h1"
    assert side_by_side.pick_unit(queue, heavy_elsewhere=2, at_once=2) == "l1", "the first light one"
    assert side_by_side.pick_unit(queue[:2], heavy_elsewhere=2, at_once=2) == "h1", "none light: the first"
    assert side_by_side.pick_unit([("l2", False), ("h1", True)], heavy_elsewhere=5, at_once=2) == "l2"
    assert side_by_side.heavy_at_once(workers=3, cores=2) == 2
    assert side_by_side.heavy_at_once(workers=8, cores=2) == 2
    assert side_by_side.heavy_at_once(workers=2, cores=16) == 1, "one worker kept for the light ones"
    assert side_by_side.heavy_at_once(workers=1, cores=None) == 1


_SIDE_BY_SIDE_SUITE = '''
import json, os, time
import pytest

@pytest.mark.parametrize("name,seconds", [("h0", 1.0), ("h1", 1.0), ("h2", 1.0), ("h3", 1.0),
                                          ("l0", 0.3), ("l1", 0.3), ("l2", 0.3), ("l3", 0.3), ("l4", 0.3)])
def test_work(name, seconds):
    start = time.time()
    time.sleep(seconds)  # the work: a heavy test's minutes, shortened
    with open(os.environ["EVENTS"], "a") as f:
        f.write(json.dumps([name, start, time.time()]) + "\\n")
'''

_SIDE_BY_SIDE_CONFTEST = '''
import pytest
from tests import side_by_side

@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    heavy = frozenset(f"test_work.py::test_work[h{i}-1.0]" for i in range(4))
    return side_by_side.CoresScheduling(config, log, heavy, cores=2)
'''


def test_pytest_xdist_runs_at_most_two_heavy_tests_at_once_on_two_cores_and_light_ones_beside(tmp_path: Path):
    """The scheduler in a real pytest-xdist run of three workers: four heavy tests first in the
    queue, light ones after (a longest-first order). Without the cap the three workers start three
    heavy ones at once."""
    import json
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "test_work.py").write_text(_SIDE_BY_SIDE_SUITE)
    (suite / "conftest.py").write_text(_SIDE_BY_SIDE_CONFTEST)
    events = tmp_path / "events"
    env = {**os.environ, "PYTHONPATH": str(root), "EVENTS": str(events)}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "3",
                           "--dist", "loadgroup", "--no-loadscope-reorder", "--rootdir", str(suite), str(suite)],
                          cwd=suite, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    ran = [json.loads(line) for line in events.read_text().splitlines()]
    assert sorted(name for name, _, _ in ran) == ["h0", "h1", "h2", "h3", "l0", "l1", "l2", "l3", "l4"]
    heavy = [(start, end) for name, start, end in ran if name.startswith("h")]
    at_once = max(sum(1 for s, e in heavy if s <= start < e) for start, _ in heavy)
    assert at_once == 2, f"{at_once} heavy tests at once: {sorted(ran, key=lambda r: r[1])}"
    last_heavy_start = max(start for start, _ in heavy)
    assert any(start < last_heavy_start for name, start, _ in ran if name.startswith("l")), \
        "a light test ran beside the heavy ones, before the last of them started"
