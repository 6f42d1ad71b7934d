"""``tfmesos package render|build``, ``tfmesos deploy`` and ``tfmesos undeploy``.

``add_subcommands`` registers them on the ``tfmesos`` command's subparsers; each handler takes
the parsed arguments and returns the exit status.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import Any

from ..errors import redact_url
from ..options.load import OptionsError, read_options_file


def _fail(what: str, message: str) -> int:
    print(f"tfmesos {what}: {message}", file=sys.stderr)
    return 1


def _quiet_marathon_library(args: argparse.Namespace) -> None:
    # The library logs every 4xx at ERROR, including the 404 that tells us an app is gone.
    if not getattr(args, "verbose", False):
        logging.getLogger("marathon").setLevel(logging.CRITICAL)


def _render(path: str, hide_env: bool = False) -> dict[str, Any]:
    from .files import load_package
    from .render import render_app

    options = read_options_file(path)
    if hide_env:  # what render prints: env values stay out of terminals and pastes
        from ..masking import mask_options

        options = mask_options(options)
    return render_app(options, load_package())


def cmd_package_render(args: argparse.Namespace) -> int:
    # The package's modules (chevron, decimal) load with the commands that use them, not with every tfmesos command.
    from .render import RenderError

    try:
        app = _render(args.options, hide_env=not args.show_env_values)
    except (OptionsError, RenderError) as exc:
        return _fail("package render", str(exc))
    print(json.dumps(app, indent=2))
    image = app.get("container", {}).get("docker", {}).get("image", "")
    print(f"tfmesos package render: the scheduler runs in the image {image} (make image builds it)", file=sys.stderr)
    return 0


def cmd_package_build(args: argparse.Namespace) -> int:
    from .repo import RepoError, build_repo

    try:
        index = build_repo(args.out_dir, args.base_url, image=args.image)
    except RepoError as exc:
        return _fail("package build", str(exc))
    except OSError as exc:
        return _fail("package build", f"cannot write {args.out_dir}: {exc}")
    print(f"universe repository written; index: {index}")
    print(f"serve {args.out_dir} at {args.base_url}, then: dcos package repo add tfmesos {args.base_url.rstrip('/')}/repo.json")
    return 0


def cmd_deploy(args: argparse.Namespace) -> int:
    from .deploy import DeployError, deploy  # marathon and requests: only for the commands that talk to Marathon
    from .render import RenderError

    _quiet_marathon_library(args)
    try:
        app = _render(args.options)
        app_id = deploy(app, args.marathon)
    except (OptionsError, RenderError, DeployError) as exc:
        return _fail("deploy", str(exc))
    shown = redact_url(args.marathon)
    print(f"deployed {app_id} on {shown}")
    print(f"watch it with: curl {shown.rstrip('/')}/v2/apps{app_id}  (or dcos marathon app show {app_id})")
    return 0


def cmd_undeploy(args: argparse.Namespace) -> int:
    from .deploy import DeployError, undeploy

    _quiet_marathon_library(args)
    try:
        undeploy(args.name, args.marathon, force=args.force, timeout=args.timeout)
    except DeployError as exc:
        return _fail("undeploy", str(exc))
    return 0


def add_subcommands(subparsers: argparse._SubParsersAction) -> None:
    package = subparsers.add_parser("package", help="the DC/OS package: render its Marathon app, build a universe repo")
    package_sub = package.add_subparsers(dest="package_command", required=True)

    render = package_sub.add_parser("render", help="print the Marathon app that DC/OS would install for OPTIONS.json")
    render.add_argument("options", metavar="OPTIONS.json", help="options JSON (see config-schema.json)")
    render.add_argument("--show-env-values", action="store_true",
                        help="print job.env and role env values as the app carries them (hidden by default: NAME=<hidden>)")
    render.set_defaults(func=cmd_package_render)

    build = package_sub.add_parser("build", help="write a universe repository holding the tfmesos package")
    build.add_argument("out_dir", metavar="OUT_DIR", help="folder for repo.json, repo/packages/T/tfmesos/0/ and the icons")
    build.add_argument("--base-url", required=True, metavar="URL",
                       help="the URL OUT_DIR will be served from (the icons' URLs start with it)")
    build.add_argument("--image", default="", metavar="IMAGE",
                       help="the scheduler's image as your agents pull it (default: resource.json's, what make image builds)")
    build.set_defaults(func=cmd_package_build)

    dep = subparsers.add_parser("deploy", help="run the scheduler for OPTIONS.json as a Marathon app (no DC/OS needed)")
    dep.add_argument("options", metavar="OPTIONS.json", help="options JSON (see config-schema.json)")
    dep.add_argument("--marathon", required=True, metavar="URL", help="Marathon's base URL, e.g. http://marathon.mesos:8080")
    dep.set_defaults(func=cmd_deploy)

    undep = subparsers.add_parser("undeploy", help="shut a deployed job down and remove its Marathon app")
    undep.add_argument("name", metavar="NAME", help="the job's service.name (its Marathon app id)")
    undep.add_argument("--marathon", required=True, metavar="URL", help="Marathon's base URL")
    undep.add_argument("--force", action="store_true", help="remove the app even if the scheduler cannot be shut down")
    undep.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for each step (default 300)")
    undep.set_defaults(func=cmd_undeploy)
