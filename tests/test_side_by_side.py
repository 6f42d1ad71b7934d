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
