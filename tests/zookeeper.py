"""A real ZooKeeper (Debian's package) on 127.0.0.1 for the tests that need one."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

ZK_SERVER = "/usr/share/zookeeper/bin/zkServer.sh"


def available() -> bool:
    return os.access(ZK_SERVER, os.X_OK) and shutil.which("java") is not None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ZooKeeper:
    def __init__(self, workdir: Path):
        self.dir = workdir
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def hosts(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> "ZooKeeper":
        data = self.dir / "data"
        data.mkdir(parents=True, exist_ok=True)
        cfg = self.dir / "zoo.cfg"
        cfg.write_text(
            f"tickTime=500\ninitLimit=10\nsyncLimit=5\ndataDir={data}\nclientPort={self.port}\n"
            "clientPortAddress=127.0.0.1\nadmin.enableServer=false\n4lw.commands.whitelist=ruok\n"
        )
        env = dict(os.environ, ZOO_LOG_DIR=str(self.dir), ZOO_LOG4J_PROP="WARN,ROLLINGFILE", JVMFLAGS="-Xmx256m")
        log = open(self.dir / "zk.out", "wb")
        self.proc = subprocess.Popen([ZK_SERVER, "start-foreground", str(cfg)], env=env, stdout=log, stderr=log,
                                     start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"zookeeper exited: {(self.dir / 'zk.out').read_text()[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                    s.sendall(b"ruok")
                    if s.recv(4) == b"imok":
                        return self
            except OSError:
                pass
            time.sleep(0.2)  # polling a server's readiness with a deadline, not synchronising a test
        raise TimeoutError("zookeeper did not start")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, 15)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, 9)
                self.proc.wait()
