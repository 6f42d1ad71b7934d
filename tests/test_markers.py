"""The markers come from what a test starts (tests/starts.py, applied by tests/conftest.py): the
reader finds a start through helpers, fixtures and test-helper modules, and no test of the suite
is written ``unit`` while it starts a process or opens a socket."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests import starts
from tests.starts import LOCALMASTER, PROCESS, SOCKET, ZOOKEEPER

SUITE = starts.TESTS


def _module(folder: Path, name: str, source: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(source))
    return path


def test_a_process_two_helpers_away_is_found_with_its_path(tmp_path: Path) -> None:
    path = _module(tmp_path, "test_synthetic.py", """
        import subprocess
        import pytest

        CLI = ["python", "-m", "tfmesos.client.cli"]

        def _run(*args):
            return _spawn(CLI + list(args))

        def _spawn(argv):
            return subprocess.run(argv, capture_output=True)

        def test_cli():
            assert _run("--help").returncode == 0

        def test_pure():
            assert sorted([2, 1]) == [1, 2]

        @pytest.mark.unit
        def test_said_unit_but_spawns():
            _run("jobs")
        """)
    found = starts.starts(path, "test_cli")
    assert found.kinds == {PROCESS}
    assert found.why == ("test_cli -> _run -> _spawn -> subprocess.run",)
    assert starts.tier(found, "") == "protocol"
    pure = starts.starts(path, "test_pure")
    assert pure.kinds == frozenset() and starts.tier(pure, "") == "unit"
    declared = starts.declared_tiers(path, "test_said_unit_but_spawns")
    assert declared == {"unit"}
    conflict = starts.unit_conflict(starts.starts(path, "test_said_unit_but_spawns"), declared)
    assert conflict is not None and "subprocess" in conflict and "_spawn -> subprocess.run" in conflict
    assert starts.unit_conflict(pure, {"unit"}) is None


def test_fixtures_helper_modules_and_module_marks_are_followed(tmp_path: Path) -> None:
    _module(tmp_path, "helpers_here.py", """
        from http.server import ThreadingHTTPServer

        def serve():
            return ThreadingHTTPServer(("127.0.0.1", 0), None)
        """)
    _module(tmp_path, "conftest.py", """
        import pytest
        from localmesos import LocalMaster

        @pytest.fixture
        def master(tmp_path):
            with LocalMaster() as m:
                yield m
        """)
    path = _module(tmp_path, "test_more.py", """
        import pytest
        from helpers_here import serve
        from tests import zookeeper

        pytestmark = pytest.mark.unit

        def test_server():
            serve()

        def test_master(master):
            assert master

        class TestZk:
            def test_zk(self):
                zookeeper.ZooKeeper("/x").start()
        """)
    assert starts.starts(path, "test_server").kinds == {SOCKET}
    assert starts.starts(path, "test_master").kinds >= {LOCALMASTER, PROCESS}
    assert starts.starts(path, "TestZk.test_zk").kinds >= {ZOOKEEPER, PROCESS}
    assert starts.test_functions(path) == ["test_server", "test_master", "TestZk.test_zk"]
    assert starts.declared_tiers(path, "TestZk.test_zk") == {"unit"}
    # The suite's own zk fixture is ZooKeeper, whatever its body reads like.
    assert ZOOKEEPER in starts.starts(SUITE / "test_markers.py", "test_fixtures_helper_modules_and_module_marks_are_followed",
                                      ("zk",)).kinds


def test_the_tier_of_a_whole_job_is_its_folder() -> None:
    nothing = starts.Found(frozenset(), ())
    assert starts.tier(nothing, "e2e") == "e2e" and starts.tier(nothing, "chaos") == "chaos"
    assert starts.tier(starts.Found(frozenset({starts.TENSORFLOW}), ()), "") == "e2e"


SUITE_FILES = sorted(p for p in SUITE.rglob("test_*.py") if "data" not in p.relative_to(SUITE).parts)


@pytest.mark.parametrize("path", SUITE_FILES, ids=lambda p: str(p.relative_to(SUITE)))
def test_no_test_written_unit_starts_anything(path: Path) -> None:
    wrong = [f"{name}: {conflict}" for name in starts.test_functions(path)
             if (conflict := starts.unit_conflict(starts.starts(path, name), starts.declared_tiers(path, name)))]
    assert not wrong, "\n".join(wrong)


def test_the_conftest_applies_the_derived_markers(request: pytest.FixtureRequest) -> None:
    # This very test starts nothing: it is unit, and carries no start marker.
    assert request.node.get_closest_marker("unit") is not None
    assert not any(request.node.get_closest_marker(m) for m in ("protocol", "subprocess", "socket", "localmaster"))


def test_the_run_time_guard_sees_a_socket_or_a_process_of_the_test_thread_only() -> None:
    # What the reader cannot see (a start hidden in tfmesos' or localmesos' own code) the guard
    # sees while a unit test runs. This test binds a socket itself, so it is protocol, unguarded.
    import socket
    import subprocess
    import sys
    import threading

    from tests.conftest import _UnitGuard

    _UnitGuard.thread, _UnitGuard.seen = threading.get_ident(), []
    try:
        elsewhere = threading.Thread(target=lambda: socket.socket().bind(("127.0.0.1", 0)))
        elsewhere.start()
        elsewhere.join()
        assert _UnitGuard.seen == []  # another thread's socket (a server left by an earlier test) is not this test's
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        assert _UnitGuard.seen == ["a socket bound", "a process started"]
    finally:
        _UnitGuard.thread, _UnitGuard.seen = None, []


def test_a_module_declares_what_the_reader_cannot_see(tmp_path: Path) -> None:
    path = _module(tmp_path, "test_declared.py", """
        STARTS = ("subprocess",)

        def test_runs_an_executor_in_process():
            pass
        """)
    found = starts.starts(path, "test_runs_an_executor_in_process")
    assert found.kinds == {PROCESS} and starts.tier(found, "") == "protocol"
    wrong = _module(tmp_path, "test_wrong.py", "STARTS = ('a process',)\n\ndef test_x():\n    pass\n")
    with pytest.raises(ValueError, match="STARTS names"):
        starts.starts(wrong, "test_x")
