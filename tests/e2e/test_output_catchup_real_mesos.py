"""test_output_catchup.py's scenarios on a real Apache Mesos (see real_mesos.py): the leading one of
two masters behind ZooKeeper killed -9 while the chief writes its last lines, and the scheduler
killed -9 meanwhile; the console and the kept record show every line once either way."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import urllib.request
from pathlib import Path

import psutil
import pytest

from tests.e2e.harness import eventually, task_processes
from tests.e2e.real_mesos import BASE_PORT, TOOLS, RealMesos, worker_ports
from tests.e2e.test_output_catchup import run_master_failover_output, run_scheduler_killed_output

pytestmark = pytest.mark.slow

AGENT = "cpus:4;mem:8192;disk:4000;ports:[31000-31999]"


class TwoMasters:
    """Two mesos-masters behind ZooKeeper (in-memory registries, quorum 1) and one agent that
    follows the leader; each master has a MESOS_HOME of its own, the agent the first's."""

    def __init__(self, tmp: Path, zk_hosts: str) -> None:
        self.zk = f"zk://{zk_hosts}/mesos-{BASE_PORT}"
        self.ports = [BASE_PORT, BASE_PORT + 10]
        self.homes = [tmp / "m0", tmp / "m1"]
        for home, port in zip(self.homes, self.ports):
            self._script(home, "stop.sh")
        try:
            for home, port in zip(self.homes, self.ports):
                self._script(home, "start-master.sh", f"--zk={self.zk}", "--quorum=1",
                             "--zk_session_timeout=3secs", env={"MASTER_PORT": str(port)})
            self._script(self.homes[0], "start-agent.sh", worker_ports(AGENT),
                         env={"AGENT_PORT": str(BASE_PORT + 1), "MESOS_MASTER": self.zk, "RECOVER": "0"})
            eventually(lambda: len(self.state()["slaves"]) == 1, 60, "the agent to register with the leader")
        except BaseException:
            self.stop()
            raise

    def _script(self, home: Path, name: str, *args: str, env: dict[str, str] | None = None) -> None:
        done = subprocess.run(["bash", str(TOOLS / name), *args],
                              env={**os.environ, "MESOS_HOME": str(home), **(env or {})},
                              capture_output=True, text=True, timeout=180)
        assert done.returncode == 0 or name == "stop.sh", f"{name}: {done.stdout}{done.stderr}"

    def leader(self) -> int | None:
        """The index of the leading master (None: none leads now)."""
        for index, port in enumerate(self.ports):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/state", timeout=5) as resp:
                    leader = json.load(resp).get("leader", "")
            except OSError:
                continue
            if leader.endswith(f":{self.ports[0]}"):
                return 0
            if leader.endswith(f":{self.ports[1]}"):
                return 1
        return None

    def state(self) -> dict:
        index = self.leader()
        if index is None:
            raise ValueError("no leading master yet")
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ports[index]}/state", timeout=10) as resp:
            return json.load(resp)

    def kill_leader(self) -> int:
        index = self.leader()
        assert index is not None, "no leading master"
        pid = int((self.homes[index] / "run" / "master.pid").read_text())
        os.kill(pid, signal.SIGKILL)
        eventually(lambda: not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE,
                   30, "the leading master to die")
        (self.homes[index] / "run" / "master.pid").unlink()
        return index

    def stop(self) -> None:
        for home in self.homes:
            self._script(home, "stop.sh")
        root = str((self.homes[0] / "run").resolve())
        for proc in psutil.process_iter(["pid"]):
            try:
                if proc.environ().get("MESOS_SANDBOX", "").startswith(root):
                    os.killpg(proc.pid, signal.SIGKILL)
            except (psutil.Error, OSError):
                continue


def test_leading_master_killed_while_the_chief_writes_its_last_lines_on_real_mesos(tmp_path, zk):
    service = "out-failover"
    masters = TwoMasters(tmp_path / "mesos", zk.hosts)
    killed: list[int] = []
    try:
        run_master_failover_output(
            tmp_path, service, masters.zk, lambda: killed.append(masters.kill_leader()),
            lambda: eventually(lambda: masters.leader() not in (None, *killed), 60, "a new leading master"))
    finally:
        for proc in task_processes(service):
            proc.kill()
        masters.stop()


def test_scheduler_killed_while_the_chief_writes_its_last_lines_on_real_mesos(tmp_path):
    with RealMesos(tmp_path / "mesos", [AGENT]) as cluster:
        run_scheduler_killed_output(tmp_path, cluster.address, "out-scheduler-real")
