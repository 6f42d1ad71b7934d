"""The ``tfmesos`` command line."""
from __future__ import annotations

if __name__ == "__main__":  # python -m: a Ctrl-C during the imports below is no traceback (see quiet_start.py)
    from .quiet_start import quiet_imports

    quiet_imports()

import argparse
import json
import logging
import os
import sys
import traceback
from pathlib import Path
from typing import Any

from ..core.phase import ENDED_PHASES
from ..core.status import NewerStatusError, StatusSnapshot
from ..errors import TfmesosError, UsageError, cut, mute_library_logs
from .history import status_lines
from localmesos.cli import add_agent_flags, tcp_port
from ..options.load import OptionsError
from ..scheduler.reach import DEFAULT_CONNECT_TIMEOUT
from .job_options import load_job


def _ignored_flags(args: argparse.Namespace, master: str | None) -> list[str]:
    """Flags given that this run would not use, each with why."""
    from ..scheduler.run_settings import EMBEDDED as defaults

    ignored = []
    if master is not None:
        ignored += [f"--{name.replace('_', '-')} changes nothing: it sizes the embedded master, and --master names another"
                    for name in ("agents", "agent_cpus", "agent_mem", "agent_disk", "gpus_per_agent")
                    if getattr(args, name) != getattr(defaults, name)]
    if not args.dry_run:
        ignored += [f"{flag} changes nothing without --dry-run" for flag, given in
                    (("--output", args.output != "text"), ("--show-env-values", args.show_env_values)) if given]
    return ignored


def cmd_run(args: argparse.Namespace) -> int:
    from ..scheduler.runner import RunSettings, run_job

    master = None if args.master in (None, "", "local") else args.master
    job = load_job(args, embedded=master is None)
    options, spec = job.options, job.spec
    for warning in job.warnings:
        print(f"tfmesos: warning: {warning}", file=sys.stderr)
    for flag in _ignored_flags(args, master):
        print(f"tfmesos: warning: {flag}", file=sys.stderr)
    settings = RunSettings(
        master=master,
        zk=args.zk or "",
        state_dir=args.state_dir or "",
        api_port=args.api_port,
        api_host=args.api_host,
        agents=args.agents,
        agent_cpus=args.agent_cpus,
        agent_mem=args.agent_mem,
        agent_disk=args.agent_disk,
        gpus_per_agent=args.gpus_per_agent,
        quiet=args.quiet,
        tf_noise=args.tf_noise,
        connect_timeout=args.connect_timeout,
        keep_serving=args.keep_serving,
        driver=args.driver or "",
    )
    if master is None:  # the embedded agents against this machine: a word before it matters
        from ..scheduler.preflight import oversold_warnings

        # sysconf, not psutil: psutil costs every run's start a few ms of imports (test_start_imports)
        memory_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**20
        for warning in oversold_warnings(spec, settings, memory_mb, os.cpu_count() or 1):
            print(f"tfmesos: warning: {warning}", file=sys.stderr)
    if args.dry_run:
        from .dry_run import print_dry_run

        if master is None:  # what the embedded master would refuse, a dry run refuses too
            from ..scheduler.preflight import local_fit_problems

            if problems := local_fit_problems(spec, settings):
                raise OptionsError(problems)
        return print_dry_run(options, spec, args.output, args.show_env_values, args.api_host, args.api_port)
    return run_job(spec, options, settings)


def cmd_status(args: argparse.Namespace) -> int:
    """The live status from the scheduler's API; once the job has ended (or with NAME and no
    API), from the record kept of it, at once: no waiting for a scheduler that is gone."""
    from . import records
    from .which_job import find_job

    records.find_token(args, args.name)  # first: with api_token_reads, finding the live job reads its API
    if not args.name and not records.api_of(args, None):  # no NAME, --api or TFMESOS_API: the one live job
        args.name = find_job(args, None, "status").name
        records.find_token(args, args.name)
    api = records.api_of(args, args.name)
    if args.name:
        live = records.live_status_of(args, args.name)
        if live is not None:
            return _print_live(live[1], args.json)
    elif api:
        snap = records.probe_status(api, records.QUICK_PROBE_SECONDS)
        if snap is not None:
            return _print_live(snap, args.json)
    # A live marker whose scheduler is gone without a word (kill -9): said at once, with its last state.
    gone = records.gone_run(args, args.name) if args.name else records.gone_at(args, api) if api else None
    if gone is not None and not _ended_since(records.recorded(args, gone["name"]), gone):
        return _print_gone(gone, args.json)
    kept = records.recorded(args, args.name) if args.name else records.end_served_at(args, api)
    if kept is not None and (not api or kept["job"].get("phase") in ENDED_PHASES):
        if args.json:  # the live status' shape, as the API served it at the end, with the kept "end"
            from .history import snapshot_of  # (where each attempt's log is); else the record itself

            snap = snapshot_of(kept)
            print(json.dumps({**snap.to_json(), "end": kept.get("end")} if snap is not None else kept, indent=2))
        else:
            print("\n".join(status_lines(kept, args.name or "")))
        return 0
    # NAME with an exported TFMESOS_API (not --api): a quick probe, no wait for a scheduler gone.
    snap = records.probe_status(api, records.QUICK_PROBE_SECONDS) if api and args.name and not args.api else None
    if not api or (args.name and not args.api and snap is None):
        from ..errors import UsageError

        raise UsageError(f"job {args.name!r}", f"no record of it in {records.where(args)}",
                         "check the name and --state-dir/--zk (what 'tfmesos run' was given), or pass --api HOST:PORT")
    snap = snap or _live_status(api, args.connect_timeout)
    if args.name and snap.name != args.name:
        from ..errors import UsageError

        raise UsageError(f"job {args.name!r}", f"not running, and no record of it in {records.where(args)}; the "
                         f"scheduler API at {api} runs job {snap.name!r}",
                         "check the name, --api and TFMESOS_API, and --state-dir/--zk (what 'tfmesos run' was given)")
    return _print_live(snap, args.json)


def _ended_since(kept: dict[str, Any] | None, gone: dict[str, Any]) -> bool:
    """Whether the job's kept end is newer than the gone run's start (it ended and kept its record,
    and only then was its scheduler killed: the record is the better word)."""
    return kept is not None and kept["job"].get("phase") in ENDED_PHASES and \
        ((kept.get("end") or {}).get("at") or 0) >= (gone.get("since") or 0)


def _print_gone(gone: dict[str, Any], as_json: bool) -> int:
    import time

    if as_json:
        print(json.dumps({"name": gone.get("name"), "phase": "GONE", "gone": gone}, indent=2))
    else:
        from .history import gone_lines

        print("\n".join(gone_lines(gone, time.time())))
    return 0


def _live_status(api: str, timeout: float) -> StatusSnapshot:
    """/v1/status, waiting up to ``timeout`` for a scheduler that may be starting."""
    from ..api import routes
    from ..api.token import token_header
    from ..scheduler.reach import parse_host_port, probe_http

    where = parse_host_port(api, "--api")
    check = "check --api (the address 'tfmesos run' printed) and that the scheduler still runs"
    status, body = probe_http(where, routes.STATUS, timeout, "the scheduler API", check, token_header())
    try:
        if status != 200:
            raise ValueError(f"HTTP {status}")
        return StatusSnapshot.from_json(json.loads(body))
    except NewerStatusError as exc:
        raise UsageError(f"the status of the job at {where}", str(exc)) from None
    except ValueError:
        raise UsageError(f"{where} is not a tfmesos scheduler API",
                         f"GET {routes.STATUS} answered HTTP {status} {cut(body[:80].decode('latin-1'))!r}", check) from None


def _print_live(snap: StatusSnapshot, as_json: bool) -> int:
    if as_json:
        print(json.dumps(snap.to_json(), indent=2))
        return 0
    from .history import duration, when
    from ..api.status_text import phase_text, progress_text, task_row

    print(f"job {snap.name}  phase {phase_text(snap.phase, snap.queued)}  framework {snap.framework_id}  "
          f"restarts {snap.job_restarts}")

    if snap.queued and snap.queued_since is not None and snap.now is not None:
        print(f"  {snap.queued} (for {duration(snap.now - snap.queued_since)})")
    if snap.ended_at:  # served after its end (--keep-serving)
        print(f"  ended {when(snap.ended_at)} after {duration(snap.ended_at - snap.started_at)}: {snap.cause}")

    if snap.progress is not None:
        print(f"  progress {progress_text('', snap.progress).strip()}")
    for t in snap.tasks:
        print("  " + task_row(t))
    if snap.tensorboard:
        print(f"  tensorboard  http://{snap.tensorboard}/")
    for e in snap.events[-10:]:
        print(f"  event: {e}")
    return 0


def cmd_jobs(args: argparse.Namespace) -> int:
    """Recent jobs that ended, newest first, from the records kept of them."""
    from . import records
    from .history import jobs_lines, running_lines

    from ..scheduler.after_end import whoami

    ends = records.all_ends(args, args.name)
    me = whoami()
    mine = ends if args.all else [rec for rec in ends if (rec.get("end") or {}).get("user") in (None, me)]
    if args.json:
        print(json.dumps(mine, indent=2))
        return 0
    live = running_lines(records.running(args, args.name))
    if live:
        print("running from this machine:\n" + "\n".join("  " + line for line in live))
    gone = [g for g in records.gone(args) if (not args.name or g.get("name") == args.name)
            and not _ended_since(records.recorded(args, g["name"]), g)]
    if gone:
        import time

        from .history import gone_row

        print("gone from this machine without a word (tfmesos status NAME says what was last known):\n"
              + "\n".join("  " + gone_row(g, time.time()) for g in gone))
    if not mine:
        print(f"no ended job of yours is kept in {records.where(args)}", file=sys.stderr)
    else:
        print("\n".join(jobs_lines(mine, records.sandbox_present)))
    if len(mine) < len(ends):
        print(f"tfmesos jobs: {len(ends) - len(mine)} job(s) of other users not listed: --all lists them", file=sys.stderr)
    return 0


def _timeout_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value <= 86400:  # also false for NaN
        raise argparse.ArgumentTypeError(f"{cut(text)!r}: expected seconds, a number > 0 and <= 86400")
    return value


def _serve_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 <= value <= 7 * 86400:  # also false for NaN
        raise argparse.ArgumentTypeError(f"{cut(text)!r}: expected seconds, a number >= 0 and <= 604800 (a week)")
    return value


def _connect_timeout_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--connect-timeout", type=_timeout_seconds, default=DEFAULT_CONNECT_TIMEOUT, metavar="SECONDS",
        help=f"how long to try reaching the master, ZooKeeper or the API before giving up (default {DEFAULT_CONNECT_TIMEOUT:g})",
    )


def _epilog() -> str:
    from .which_job import RULE

    import textwrap

    rule = textwrap.fill(f"Commands that act on a job (status, logs, kill, restart): {RULE}", 100, break_on_hyphens=False)
    return (f"{rule}\n\nShell completion of commands, options and live job names (bash; zsh with bashcompinit):\n"
            '  eval "$(register-python-argcomplete tfmesos)"')


def build_parser(only_run: bool = False) -> argparse.ArgumentParser:
    """The whole command line; ``only_run``: the ``run`` command alone (what ``tfmesos run ...``
    parses: the other commands' flags would load the modules behind them at every job's start)."""
    parser = argparse.ArgumentParser(prog="tfmesos", description="Run distributed TensorFlow jobs on Mesos and DC/OS.",
                                     epilog=None if only_run else _epilog(),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run a job described by an options JSON and wait for its end")
    run.add_argument("options", nargs="?", help="options file, JSON or .yaml/.yml (see config-schema.json)")
    run.add_argument("--options-from-env", action="store_true", help="read the options from TFMESOS_OPT_* variables (DC/OS package)")
    run.add_argument("--master", help="local (default: an embedded master), HOST:PORT, or zk://HOST:PORT/mesos")
    run.add_argument("--zk", help="zk://HOST:PORT/PATH to persist the scheduler's state (failover)")
    run.add_argument("--state-dir", help="directory to persist the scheduler's state when there is no ZooKeeper")
    run.add_argument("--api-port", type=tcp_port, help="port of the scheduler's HTTP API (default: service.api_port)")
    run.add_argument("--api-host", default="127.0.0.1", help="address the scheduler's HTTP API listens on (0.0.0.0 under Marathon)")
    run.add_argument("--dry-run", action="store_true",
                     help="print what the job would send (env values hidden), launch nothing")
    run.add_argument("--output", choices=("text", "json", "options"), default="text",
                     help="with --dry-run: text: the resolved options and the task plan; json: the FrameworkInfo and "
                          "TaskInfos for an offer that fits the job; options: only the resolved options, as JSON")
    run.add_argument("--show-env-values", action="store_true", help="with --dry-run: print env values instead of hiding them")
    add_agent_flags(run, "embedded master: ")
    _connect_timeout_flag(run)
    run.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help="debug logging")
    run.add_argument("-q", "--quiet", action="store_true", help="only the job's output and the summary")
    run.add_argument("--tf-noise", action="store_true",
                     help="show TensorFlow's start-up messages (absl, oneDNN, CUDA) in the tasks' output; by default "
                          "they are folded into one line per task (the task's logs keep them all)")
    run.add_argument("--driver", choices=("own", "pymesos"), default=None,
                     help="the Mesos scheduler driver: own (default; TFMESOS_DRIVER sets another default) or "
                          "pymesos (its extra installed: python tools/install_pymesos.py)")
    run.add_argument("--keep-serving", type=_serve_seconds, default=0.0, metavar="SECONDS",
                     help="after the job ends, keep its API and status page up this long (tfmesos kill ends it sooner)")
    run.set_defaults(func=cmd_run)
    if only_run:
        return _own_errors(parser, sub)

    # Listed for --help; main() hands its arguments to the embedded master's own parser.
    sub.add_parser("local-master", help="run the embedded Mesos master on its own (see: tfmesos local-master --help)")

    from . import logs, operate
    from .which_job import RULE, job_name_argument

    what = "show a job: live from its scheduler's HTTP API, or from its kept record once it ended"
    st = sub.add_parser("status", help=what, description=what[0].upper() + what[1:] + ". " + RULE)
    job_name_argument(st, help="the job's service.name (its kept record when it is not running)")
    st.add_argument("--api", help="HOST:PORT of the scheduler API (or TFMESOS_API)")
    st.add_argument("--json", action="store_true")
    logs.add_record_flags(st)
    _connect_timeout_flag(st)
    st.set_defaults(func=cmd_status)

    jobs = sub.add_parser("jobs", help="list the jobs running from this machine (a queued one with why) and your "
                                       "recent jobs that ended: end, when, duration, tasks, where their logs are")
    jobs.add_argument("name", nargs="?", metavar="NAME", help="only this job's runs")
    jobs.add_argument("--all", action="store_true", help="every user's jobs kept there (a shared state directory "
                                                         "or ZooKeeper), not only yours")
    jobs.add_argument("--json", action="store_true", help="the kept records as JSON")
    logs.add_record_flags(jobs)
    jobs.set_defaults(func=cmd_jobs)

    logs.add_subcommand(sub)
    operate.add_subcommands(sub)

    try:
        from ..package.cli import add_subcommands
    except ImportError:  # the package subcommands are optional at import time
        pass
    else:
        add_subcommands(sub)
    return _own_errors(parser, sub)


def _own_errors(parser: argparse.ArgumentParser, sub: Any) -> argparse.ArgumentParser:
    """Each command answers an argument it does not know with its own usage (``tfmesos run
    [-h] ...``), the same whether the whole command line was built or ``run``'s alone."""
    for command in sub.choices.values():
        command.set_defaults(command_parser=command)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["local-master"]:
        # Its flags belong to the embedded master's own parser (argparse cannot forward them).
        from localmesos import main as local_master_main

        return local_master_main(argv[1:])
    if "_ARGCOMPLETE" in os.environ:  # the shell asks for completions (register-python-argcomplete): answered, exits
        import argcomplete

        argcomplete.autocomplete(build_parser())
    parser = build_parser(only_run=argv[:1] == ["run"])
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # argparse would say it with the top-level usage, which names no command's flags
        getattr(args, "command_parser", parser).error(f"unrecognized arguments: {' '.join(unknown)}")
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    mute_library_logs()
    try:
        return args.func(args)
    except OptionsError as exc:
        print(f"tfmesos: {exc}", file=sys.stderr)
        return 2
    except TfmesosError as exc:
        if args.verbose:
            traceback.print_exc()
        print(f"tfmesos: {exc.line()}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("tfmesos: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `tfmesos run --dry-run ... | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception as exc:  # noqa: BLE001 - the one place where a bug becomes a plain line
        if args.verbose:
            traceback.print_exc()
        where = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
        what = f"{args.command} failed" + (f" in {Path(where.filename).name}:{where.lineno}" if where else "")
        print(f"tfmesos: {what}: {type(exc).__name__}: {cut(str(exc), 300)}"
              + ("" if args.verbose else " (run with -v for the details)"), file=sys.stderr)
        return 1


if __name__ == "__main__":
    from .quiet_start import imported

    imported()
    sys.exit(main())
