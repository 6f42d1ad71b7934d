"""Install tfmesos' ``pymesos`` extra (pymesos 0.3.15, for ``--driver pymesos``) and its http-parser
dependency into the running interpreter. The default driver is tfmesos' own: nothing here is
needed for it.

Why this exists: http-parser 0.9.0 (the last release, required by pymesos) ships a
Cython-generated ``parser.c`` that no longer compiles on CPython >= 3.11
(``longintrepr.h`` moved) and a ``setup.py`` that imports the removed ``imp`` module
on 3.12+. We download the sdist, regenerate the C file with Cython 3, replace the
``imp`` import, and build it. Should the build still fail, we install the package's
own pure-Python parser (``http_parser.pyparser``), which pymesos falls back to.

Usage: python tools/install_pymesos.py   (idempotent; exits 0 when pymesos imports); then
``pip install '.[pymesos]'`` finds the extra's requirements met.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
from pathlib import Path

HTTP_PARSER = "http-parser==0.9.0"
PYMESOS = "pymesos==0.3.15"
PIP = [sys.executable, "-m", "pip", "--disable-pip-version-check"]


def _have(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def _pip(*args: str) -> None:
    subprocess.run([*PIP, *args], check=True)


# What http-parser's setup.py takes from ``imp``, which Python 3.12 removed.
LOAD_SOURCE = """import importlib.util as _ilu
def load_source(name, path):
    spec = _ilu.spec_from_file_location(name, path)
    mod = _ilu.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
"""


def _fetch_sdist(workdir: Path) -> Path:
    args = ["download", "--quiet", "--no-deps", "--no-binary", ":all:", HTTP_PARSER, "-d", str(workdir)]
    if sys.version_info >= (3, 12):
        # pip runs the sdist's setup.py for its metadata even to download it: give that run an ``imp``
        # (on PYTHONPATH, so without build isolation, which would replace PYTHONPATH).
        if not _have("setuptools"):  # no longer in a new venv from 3.12; that run needs it
            _pip("install", "--quiet", "setuptools")
        shim = workdir / "imp-shim"
        shim.mkdir()
        (shim / "imp.py").write_text(LOAD_SOURCE)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(shim), os.environ.get("PYTHONPATH")]))}
        subprocess.run([*PIP, *args, "--no-build-isolation"], check=True, env=env)
    else:
        _pip(*args)
    archive = next(workdir.glob("http-parser-*.tar.gz"))
    extract(archive, workdir)
    return next(p for p in workdir.iterdir() if p.is_dir() and p.name.startswith("http-parser-"))


def extract(archive: Path, dest: Path, *, use_filter: bool | None = None) -> None:
    """Unpack ``archive`` into ``dest``, refusing members that would land outside it or are links,
    devices or FIFOs. ``tarfile``'s ``filter="data"`` does that from Python 3.11.4 (and 3.12);
    Debian 12's Python 3.11.2 has no ``filter`` argument, so there we check each member ourselves.
    ``use_filter`` forces one way (tests); ``None`` picks by what this ``tarfile`` has."""
    if use_filter is None:
        use_filter = hasattr(tarfile, "data_filter")
    with tarfile.open(archive) as tar:
        if use_filter:
            tar.extractall(dest, filter="data")
            return
        root = dest.resolve()
        members = []
        for member in tar.getmembers():
            target = (root / member.name).resolve()
            if target != root and root not in target.parents:
                raise ValueError(f"{archive.name}: member {member.name!r} would land outside {root}")
            if not (member.isfile() or member.isdir()):
                raise ValueError(f"{archive.name}: member {member.name!r} is not a plain file or folder")
            member.mode &= 0o755  # no set-uid/set-gid bits, as the data filter does
            members.append(member)
        tar.extractall(dest, members=members)


def _patch_setup(src: Path) -> None:
    setup_py = src / "setup.py"
    text = setup_py.read_text()
    text = text.replace("from imp import load_source", LOAD_SOURCE)
    setup_py.write_text(text)


def _build_with_cython(src: Path) -> bool:
    if not _have("Cython"):
        _pip("install", "--quiet", "Cython>=3")
    pkg = src / "http_parser"
    for stale in pkg.glob("*.so"):
        stale.unlink()
    try:
        # Run from the sdist root: inside http_parser/ its http.py would shadow the stdlib's http.
        subprocess.run(
            [sys.executable, "-m", "cython", "-3", "http_parser/parser.pyx", "-o", "http_parser/parser.c"],
            cwd=src,
            check=True,
        )
        _patch_setup(src)
        _pip("install", "--quiet", "--no-build-isolation", "--no-deps", str(src))
    except subprocess.CalledProcessError as exc:
        print(f"install_pymesos: compiled http-parser failed ({exc}); using its pure-Python parser", file=sys.stderr)
        return False
    return True


def _install_pure_python(src: Path) -> None:
    target = Path(sysconfig.get_paths()["purelib"]) / "http_parser"
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    for py in (src / "http_parser").glob("*.py"):
        shutil.copy2(py, target / py.name)
    # Minimal metadata so that pip sees pymesos' requirement on http-parser as met.
    dist_info = target.parent / "http_parser-0.9.0.dist-info"
    dist_info.mkdir(exist_ok=True)
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: http-parser\nVersion: 0.9.0\n")
    (dist_info / "INSTALLER").write_text("tfmesos-tools\n")
    (dist_info / "RECORD").write_text("")


def main() -> int:
    if not _have("http_parser"):
        with tempfile.TemporaryDirectory() as tmp:
            src = _fetch_sdist(Path(tmp))
            if not _build_with_cython(src):
                _install_pure_python(src)
    if not _have("pymesos"):
        # With http-parser in place pip takes it as met and installs the rest (six, addict, kazoo).
        _pip("install", "--quiet", PYMESOS)
    # A smoke import proves the pair works (pymesos imports http_parser.http at import time).
    subprocess.run([sys.executable, "-c", "import pymesos, http_parser.http"], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
