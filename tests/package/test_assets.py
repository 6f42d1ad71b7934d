"""The package names only what exists: the image `make image` builds, tagged with the package's
version (which is the project's), and icons that are PNG files in the repository."""
import json
import struct
import subprocess
import sys

import pytest

import tfmesos
from tfmesos.package.checks import check_package

from tests.package.helpers import PACKAGE_DIR, REFERENCE, ROOT, render

RESOURCE = json.loads((PACKAGE_DIR / "resource.json").read_text())
VERSION = json.loads((PACKAGE_DIR / "package.json").read_text())["version"]


def test_versions_agree_package_project_and_image_tag():
    setup_version = next(line.split("=")[1].strip() for line in (ROOT / "setup.cfg").read_text().splitlines()
                         if line.startswith("version"))
    assert VERSION == setup_version == tfmesos.__version__
    assert RESOURCE["assets"]["container"]["docker"] == {"tfmesos": f"tfmesos/tfmesos:{VERSION}"}


def test_make_image_builds_and_exports_the_image_the_package_names():
    dry = subprocess.run(["make", "-n", "image-export", "IMAGE_DIR=/x"], cwd=ROOT, capture_output=True, text=True,
                         timeout=60, check=True).stdout
    image = RESOURCE["assets"]["container"]["docker"]["tfmesos"]
    assert "tools/image/build.sh" in dry and f"tools/image/export.sh /x {image}" in dry
    assert f'IMAGE=${{IMAGE:-tfmesos/tfmesos:$TAG}}' in (ROOT / "tools" / "image" / "build.sh").read_text()


@pytest.mark.parametrize("name, size", [("icon-small", 48), ("icon-medium", 128), ("icon-large", 256)])
def test_every_icon_is_a_png_in_the_package_of_the_size_dcos_prefers(name, size):
    data = (PACKAGE_DIR / RESOURCE["images"][name]).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    assert struct.unpack(">II", data[16:24]) == (size, size)


def test_the_check_catches_an_icon_that_is_missing_or_no_png(tmp_path):
    for where, content in (("images/none.png", None), ("images/icon.png", b"GIF89a")):
        copy = tmp_path / where.replace("/", "-")
        copy.mkdir()
        for item in PACKAGE_DIR.iterdir():
            if item.is_file():
                (copy / item.name).write_bytes(item.read_bytes())
        if content is not None:
            (copy / "images").mkdir()
            (copy / where).write_bytes(content)
        resource = {**RESOURCE, "images": {"icon-small": where}}
        (copy / "resource.json").write_text(json.dumps(resource))
        assert check_package(copy, REFERENCE) == [
            f"resource.json: images/icon-small: {where!r} is no PNG file in {copy.name}/; "
            "expected a path to one (tfmesos package build turns it into a URL)"]


def test_package_render_shows_the_image(tmp_path):
    options = tmp_path / "o.json"
    options.write_text(json.dumps({"service": {"name": "x"}, "job": {"command": "python3 t.py"},
                                   "roles": {"worker": {"count": 1}}}))
    done = subprocess.run([sys.executable, "-m", "tfmesos.client.cli", "package", "render", str(options)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    image = f"tfmesos/tfmesos:{VERSION}"
    assert json.loads(done.stdout)["container"]["docker"]["image"] == image
    assert f"the scheduler runs in the image {image}" in done.stderr
    assert render({"service": {"name": "y"}, "job": {"command": "c"}})["container"]["docker"]["image"] == image
