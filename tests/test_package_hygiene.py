"""The package's own structure: imports that resolve, a clean wheel build, the pymesos installer's
extraction on Pythons with and without tarfile's data filter."""
from __future__ import annotations

import ast
import io
import os
import pwd
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

def _relative_imports(path: Path) -> list[tuple[int, str]]:
    """(line, dotted module) of every ``from .x import y`` in the file, resolved against its package."""
    package = path.relative_to(ROOT).parent.parts
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[: len(package) - (node.level - 1)]
            out.append((node.lineno, ".".join(base + ((node.module,) if node.module else ()))))
    return out


def test_every_relative_import_in_tfmesos_names_a_module_that_exists():
    missing = []
    for path in sorted((ROOT / "tfmesos").rglob("*.py")):
        for line, module in _relative_imports(path):
            where = ROOT.joinpath(*module.split("."))
            if not (where.with_suffix(".py").is_file() or (where / "__init__.py").is_file()):
                missing.append(f"{path.relative_to(ROOT)}:{line}: {module}")
    assert not missing, missing


def test_tfmesos_report_is_the_progress_function():
    import tfmesos
    from tfmesos.task.report import report

    assert tfmesos.report is report


def test_the_clones_install_finds_tfmesos_through_a_path_line_not_an_import_finder():
    """`make setup`'s editable install (setup.cfg's package_dir): the clone is a path line of a .pth
    file, which site reads without importing anything; setuptools' finder instead had every Python
    process of the suite import its module, pathlib and urllib.parse at startup (~10 ms of CPU)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    probe = ("import sys; startup = sorted(m for m in sys.modules if 'editable' in m or m == 'pathlib'); "
             "import tfmesos, localmesos; print(tfmesos.__file__, localmesos.__file__, *startup)")
    out = subprocess.run([sys.executable, "-c", probe], cwd="/", env=env, capture_output=True, text=True,
                         timeout=60, check=True).stdout.split()
    assert out == [str(ROOT / "tfmesos" / "__init__.py"), str(ROOT / "localmesos" / "__init__.py")], out


def test_the_wheel_builds_without_setuptools_warnings_and_carries_the_data_folders(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for name in ("setup.py", "setup.cfg", "README.md", "config-schema.json"):
        shutil.copy2(ROOT / name, src / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    shutil.copytree(ROOT / "tfmesos", src / "tfmesos", symlinks=True, ignore=ignore)
    shutil.copytree(ROOT / "universe-package", src / "universe-package", symlinks=True, ignore=ignore)
    out = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "--no-build-isolation", "-w", str(tmp_path / "dist"), str(src)],
        capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    log = out.stdout + out.stderr
    assert "absent from the `packages` configuration" not in log, log[-3000:]
    names = zipfile.ZipFile(next((tmp_path / "dist").glob("tfmesos-*.whl"))).namelist()
    for needed in ("tfmesos/scheduler/web/index.html", "tfmesos/scheduler/web/app.js", "tfmesos/config-schema.json",
                   "tfmesos/package/universe/config.json", "tfmesos/package/universe/marathon.json.mustache"):
        assert needed in names, needed
    assert not [n for n in names if "__pycache__" in n]


def _tar(path: Path, members: dict[str, bytes], link: str | None = None) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o4755  # set-uid: must not survive
            tar.addfile(info, io.BytesIO(data))
        if link:
            info = tarfile.TarInfo(link)
            info.type = tarfile.SYMTYPE
            info.linkname = "/etc/passwd"
            tar.addfile(info)
    return path


_EXTRACT = """
import sys, tarfile
from pathlib import Path
sys.path.insert(0, {tools!r})
import install_pymesos
print("filter" if hasattr(tarfile, "data_filter") else "fallback")
try:
    install_pymesos.extract(Path(sys.argv[1]), Path(sys.argv[2]), use_filter={use_filter})
except Exception as exc:
    print("refused", type(exc).__name__, exc)
"""


def _extract_with(python: str, archive: Path, dest: Path, use_filter: bool | None) -> str:
    script = _EXTRACT.format(tools=str(ROOT / "tools"), use_filter=use_filter)
    out = subprocess.run([python, "-c", script, str(archive), str(dest)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.parametrize("use_filter", [False, None])
def test_the_installer_extracts_safely_with_and_without_tarfiles_data_filter(tmp_path, use_filter):
    good = _tar(tmp_path / "good.tar.gz", {"http-parser-0.9.0/setup.py": b"x = 1\n"})
    dest = tmp_path / "out"
    dest.mkdir()
    assert "refused" not in _extract_with(sys.executable, good, dest, use_filter)
    extracted = dest / "http-parser-0.9.0" / "setup.py"
    assert extracted.read_bytes() == b"x = 1\n"
    assert not extracted.stat().st_mode & 0o4000
    for name, archive in (("escape", _tar(tmp_path / "bad.tar.gz", {"../evil.py": b"boom"})),
                          ("link", _tar(tmp_path / "link.tar.gz", {}, link="http-parser-0.9.0/passwd"))):
        out = _extract_with(sys.executable, archive, dest, use_filter)
        assert "refused" in out, (name, out)
    assert not (tmp_path / "evil.py").exists()
    assert not (dest / "http-parser-0.9.0" / "passwd").exists()


def test_the_installer_extracts_on_debians_own_python3(tmp_path):
    # Debian 12's /usr/bin/python3 is 3.11.2, whose tarfile has no data filter: the installer's
    # default choice must work there (make run PYTHON=/usr/bin/python3).
    python = shutil.which("python3", path="/usr/bin")
    assert python, "/usr/bin/python3 is missing: the set-up's supported system Python"
    good = _tar(tmp_path / "good.tar.gz", {"http-parser-0.9.0/setup.py": b"x = 1\n"})
    out = _extract_with(python, good, tmp_path, None)
    assert "refused" not in out, out
    assert (tmp_path / "http-parser-0.9.0" / "setup.py").is_file()


def _pythons_to_set_up_with() -> list[str]:
    """Debian 12's own python3 (3.11.2) always; every Python 3.12+ this machine has besides."""
    found = [shutil.which("python3", path="/usr/bin")]
    assert found[0], "/usr/bin/python3 is missing: the set-up's supported system Python"
    home = Path(pwd.getpwuid(os.getuid()).pw_dir)  # the suite runs with a HOME of its own
    for root in sorted(home.glob(".pyenv/versions/3.1[2-9]*")) + [Path("/usr/local"), Path("/usr")]:
        for name in ("python3.12", "python3.13", "python3.14"):
            if (root / "bin" / name).is_file() and str(root / "bin" / name) not in found:
                found.append(str(root / "bin" / name))
    return found


@pytest.mark.slow
@pytest.mark.parametrize("python", _pythons_to_set_up_with())
def test_the_installer_fetches_http_parsers_sdist_on_each_python(tmp_path, python):
    # pip prepares an sdist's metadata even to download it, running its setup.py, which imports
    # `imp` (gone in Python 3.12): the installer must get past that on every supported Python.
    venv = tmp_path / "venv"
    subprocess.run([python, "-m", "venv", str(venv)], check=True, timeout=300)
    script = (f"import sys; from pathlib import Path; sys.path.insert(0, {str(ROOT / 'tools')!r}); "
              f"import install_pymesos; print(install_pymesos._fetch_sdist(Path({str(tmp_path)!r})))")
    out = subprocess.run([str(venv / "bin" / "python"), "-c", script], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert (Path(out.stdout.strip()) / "http_parser" / "parser.pyx").is_file()
