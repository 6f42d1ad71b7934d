"""A real Apache Mesos master and agents for the real-Mesos suite (tests/e2e/test_*real_mesos*.py).

Started with the real-mesos scripts of the folder TFMESOS_REAL_MESOS names (start-master.sh,
start-agent.sh, stop.sh; `make test-real-mesos` sets it), each cluster with a MESOS_HOME, work dirs
and ports of its own: the master on ``base_port`` (TFMESOS_REAL_MESOS_PORT, default 5050), agent i
on base_port + 1 + i, so that runs side by side, or another user's Mesos, never meet.

Under pytest-xdist (``-n``) each worker's clusters move aside: the master to REAL_MESOS_PORT +
20 * worker (a second master, as test_output_catchup_real_mesos.py starts, at +10), and the agents'
task ports, which the tests write within 31000-33999 (Mesos' default ranges, [31000-31999] to
[33000-33999] for agents 0-2, or a part of one: the drain cases' [31100-31199]), to the worker's
own slice of 10000-19999 (below the embedded masters' range and the kernel's ephemeral ports):
see ``worker_ports``. Every range moves, whatever its size: TensorFlow's servers bind their port on
every address, so a port two clusters both hand out is one port, even where the agents have IPs
of their own (``machine_per_agent``): the second server fails with "Could not start gRPC server".
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

import psutil

from tests.e2e.harness import eventually

TOOLS = Path(os.environ.get("TFMESOS_REAL_MESOS", "")).resolve()
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
WORKER = int(_WORKER[2:]) if _WORKER.startswith("gw") else None  # this xdist worker's index (None: serial)
WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
BASE_PORT = int(os.environ.get("TFMESOS_REAL_MESOS_PORT", "5050")) + 20 * (WORKER or 0)
_RANGE = re.compile(r"\[(?P<first>\d+)-(?P<last>\d+)\]")  # a ports range, as Mesos' resources write it
_WRITTEN = range(31000, 34000)  # where the tests' task ports lie: agent i's thousand from 31000 + 1000 i


def worker_ports(resources: str) -> str:
    """``resources`` with each task ports range the tests write (within 31000-33999: agent i's
    thousand from 31000 + 1000 i, whole or a part) moved, at the same offset, to this xdist
    worker's slice of 10000-19999 (unchanged in a serial run), so that the tasks of clusters side
    by side never bind the same ports. A range elsewhere stays (the images' cluster, alone in its
    xdist group, on ports of its own); one that strays out of its thousand, or out of the room a
    worker has per agent, is refused: moved, it would meet another's."""
    if WORKER is None:
        return resources
    size = 10000 // WORKERS
    per_agent = min(1000, size // 3)
    if per_agent < 100:
        raise ValueError(f"{WORKERS} workers leave {per_agent} task ports per agent: run the real-Mesos suite "
                         "with fewer workers")

    def moved(m: re.Match) -> str:
        first, last = int(m.group("first")), int(m.group("last"))
        if first not in _WRITTEN and last not in _WRITTEN:
            return m.group(0)
        agent, offset = divmod(first - _WRITTEN.start, 1000)
        if first not in _WRITTEN or last not in _WRITTEN or last < first or offset + last - first >= per_agent:
            raise ValueError(f"ports {m.group(0)} of {resources!r}: a test writes its agents' task ports within one "
                             f"thousand of 31000-33999, at most {per_agent} from its start with {WORKERS} workers, "
                             "so that side by side they move apart")
        start = 10000 + size * WORKER + per_agent * agent + offset
        return f"[{start}-{start + last - first}]"

    return _RANGE.sub(moved, resources)


class RealMesos:
    """mesos-master and one mesos-agent per resources string, started in order so that agent i
    registers as S<i>, like the embedded master's agents."""

    def __init__(self, home: Path, agents: list[str], master_flags: list[str] = (), agent_flags: list[str] = (),
                 base_port: int = BASE_PORT, machine_per_agent: bool = False) -> None:
        self.home = home
        # Agent i on 127.0.0.(i+2), its own machine for Mesos' maintenance (on 127.0.0.1 all are one).
        self.machine_per_agent = machine_per_agent
        self.port = base_port
        self.address = f"127.0.0.1:{base_port}"
        self.agents = [worker_ports(a) for a in agents]
        self.agent_flags = list(agent_flags)
        self._script("stop.sh")
        self._script("start-master.sh", *master_flags)
        try:
            for index in range(len(agents)):
                self.start_agent(index)
                eventually(lambda: len(self.state()["slaves"]) == index + 1, 60, f"agent {index} to register")
        except BaseException:
            self.stop()
            raise

    def __enter__(self) -> "RealMesos":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def agent_port(self, index: int) -> int:
        return self.port + 1 + index

    def start_agent(self, index: int, recover: bool = False) -> None:
        """Start agent ``index`` (again: with ``recover`` it keeps its id and adopts its executors,
        ``--recover=reconnect``, Mesos' default)."""
        self._script("start-agent.sh", self.agents[index], *self.agent_flags,
                     env={"AGENT_PORT": str(self.agent_port(index)), "RECOVER": "1" if recover else "0",
                          **({"AGENT_IP": f"127.0.0.{index + 2}"} if self.machine_per_agent else {})})

    def agent_pid(self, index: int) -> int:
        return int((self.home / "run" / f"agent-{self.agent_port(index)}.pid").read_text())

    def signal_agent(self, index: int, sig: int) -> None:
        os.kill(self.agent_pid(index), sig)

    def kill_agent(self, index: int) -> None:
        """SIGKILL the agent process (its executors live on, in sessions of their own)."""
        pid = self.agent_pid(index)
        os.kill(pid, signal.SIGKILL)
        eventually(lambda: not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE,
                   30, "the agent to die")
        # Gone, though perhaps not yet reaped (the start script's `kill -0` would take a zombie
        # for a running agent): it is no longer this cluster's agent.
        (self.home / "run" / f"agent-{self.agent_port(index)}.pid").unlink()

    def sandboxes(self) -> Path:
        return self.home / "run"

    def sandbox_of(self, proc: psutil.Process, index: int) -> bool:
        """Whether ``proc`` runs in a sandbox of agent ``index``."""
        try:
            sandbox = proc.environ().get("MESOS_SANDBOX", "")
        except (psutil.Error, OSError):
            return False
        return sandbox.startswith(str(self.sandboxes() / f"agent-{self.agent_port(index)}-work") + "/")

    def _script(self, name: str, *args: str, env: dict[str, str] | None = None) -> None:
        done = subprocess.run(["bash", str(TOOLS / name), *args],
                              env={**os.environ, "MESOS_HOME": str(self.home), "MASTER_PORT": str(self.port),
                                   "MESOS_MASTER": self.address, **(env or {})},
                              capture_output=True, text=True, timeout=180)
        assert done.returncode == 0 or name == "stop.sh", f"{name}: {done.stdout}{done.stderr}"

    def state(self) -> dict[str, Any]:
        with urllib.request.urlopen(f"http://{self.address}/state", timeout=10) as resp:
            return json.load(resp)

    def operator(self, call: dict[str, Any]) -> None:
        request = urllib.request.Request(f"http://{self.address}/api/v1", data=json.dumps(call).encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as resp:
            assert resp.status == 200, resp.status

    def stop(self) -> None:
        """Stop the agents and the master; then any executor a test left (an agent's SIGTERM leaves
        checkpointed executors running), found by its sandbox under this cluster's home."""
        for index in range(len(self.agents)):  # a stopped (SIGSTOP) agent cannot take SIGTERM
            try:
                self.signal_agent(index, signal.SIGCONT)
            except (OSError, ValueError):
                pass
        self._script("stop.sh")
        for proc in self.leftovers():
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass

    def leftovers(self) -> list[psutil.Process]:
        """Processes running in a sandbox of this cluster's agents (executors and their tasks)."""
        root = str(self.sandboxes().resolve())
        found = []
        for proc in psutil.process_iter(["pid"]):
            try:
                if proc.cwd().startswith(root) or proc.environ().get("MESOS_SANDBOX", "").startswith(root):
                    found.append(proc)
            except (psutil.Error, OSError):
                continue
        return found
