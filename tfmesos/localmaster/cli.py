"""``python -m tfmesos.localmaster`` / ``tfmesos local-master``."""
from __future__ import annotations

import argparse
import gc
import logging
import signal
import sys
import threading
from pathlib import Path

from .auth import load_credentials


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tfmesos local-master",
        description="Run an embedded single-node Mesos master (v1 HTTP API) with logical agents.")
    parser.add_argument("--port", type=int, default=5050, help="master port on 127.0.0.1 (default 5050)")
    parser.add_argument("--agents", type=int, default=2, help="number of logical agents (default 2)")
    parser.add_argument("--cpus", type=float, default=4.0, help="cpus per agent (default 4)")
    parser.add_argument("--mem", type=float, default=8192.0, help="memory per agent in MB (default 8192)")
    parser.add_argument("--disk", type=float, default=20000.0, help="disk per agent in MB (default 20000)")
    parser.add_argument("--gpus-per-agent", type=int, default=0, help="emulated GPUs per agent (default 0)")
    parser.add_argument("--first-port", type=int, default=31000,
                        help="first port offered to tasks (default 31000); agent i offers "
                             "[first + i*n, first + (i+1)*n - 1]; 0 picks a free block (kept in the work dir)")
    parser.add_argument("--ports-per-agent", type=int, default=1000, help="ports offered per agent (default 1000)")
    parser.add_argument("--work-dir", type=Path, default=None,
                        help="sandbox root (default: a temporary directory removed on exit)")
    parser.add_argument("--credentials", type=Path, default=None,
                        help="file with 'principal secret' lines: enables HTTP Basic authentication")
    parser.add_argument("--zk", default=None,
                        help="zk://HOST:PORT/PATH: announce this master there as a Mesos master does")
    parser.add_argument("--log-level", default="WARNING", help="logging level (default WARNING)")
    return parser


def _chosen_first_port(work_dir: Path | None, size: int) -> int:
    """A free block of ports; a restarted master with the same work dir reuses its block, since
    its running tasks hold ports from it."""
    from .ports import free_port_block

    record = work_dir / "meta" / "first_port" if work_dir else None
    if record is not None and record.is_file():
        return int(record.read_text())
    first = free_port_block(size)
    if record is not None:
        record.parent.mkdir(parents=True, exist_ok=True)
        record.write_text(str(first))
    return first


def main(argv: list[str] | None = None) -> int:
    from .local_master import LocalMaster  # imported late: keeps --help cheap

    args = _parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(name)s %(levelname)s %(message)s")
    credentials = load_credentials(args.credentials) if args.credentials else None
    stop = threading.Event()

    def request_stop(signum: int, frame: object) -> None:
        stop.set()

    first_port = args.first_port or _chosen_first_port(args.work_dir, args.agents * args.ports_per_agent)
    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    master = LocalMaster(host="127.0.0.1", port=args.port, agents=args.agents, agent_cpus=args.cpus,
                         agent_mem=args.mem, agent_disk=args.disk, gpus_per_agent=args.gpus_per_agent,
                         ports_per_agent=args.ports_per_agent, first_port=first_port,
                         work_dir=args.work_dir, credentials=credentials)
    contender = None
    try:
        master.start()
        # Agents and their records live as long as the process: keep them out of the cyclic
        # collector's full scans, which otherwise run inside allocation rounds (40% of a round
        # that offers 10,000 agents).
        gc.collect()
        gc.freeze()
        if args.zk:
            from .zk_contender import ZkContender

            contender = ZkContender(args.zk, master.master_info())
            contender.start()
        print(f"tfmesos local-master listening on {master.address}", flush=True)
        while not stop.wait(3600):
            pass
    finally:
        if contender is not None:
            contender.stop()
        master.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
