"""``python -m tfmesos.localmaster`` / ``tfmesos local-master``."""
from __future__ import annotations

import argparse
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
    parser.add_argument("--work-dir", type=Path, default=None,
                        help="sandbox root (default: a temporary directory removed on exit)")
    parser.add_argument("--credentials", type=Path, default=None,
                        help="file with 'principal secret' lines: enables HTTP Basic authentication")
    parser.add_argument("--log-level", default="WARNING", help="logging level (default WARNING)")
    return parser


def main(argv: list[str] | None = None) -> int:
    from .local_master import LocalMaster  # imported late: keeps --help cheap

    args = _parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(name)s %(levelname)s %(message)s")
    credentials = load_credentials(args.credentials) if args.credentials else None
    stop = threading.Event()

    def request_stop(signum: int, frame: object) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    master = LocalMaster(host="127.0.0.1", port=args.port, agents=args.agents, agent_cpus=args.cpus,
                         agent_mem=args.mem, agent_disk=args.disk, gpus_per_agent=args.gpus_per_agent,
                         work_dir=args.work_dir, credentials=credentials)
    try:
        master.start()
        print(f"tfmesos local-master listening on {master.address}", flush=True)
        while not stop.wait(3600):
            pass
    finally:
        master.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
