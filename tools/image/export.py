"""Write an image as the tarball a Mesos agent's ``--docker_registry=DIR`` reads.

Mesos' local puller finds ``tfmesos/tfmesos:TAG`` at ``DIR/tfmesos/tfmesos:TAG.tar``, a
``docker save`` archive whose ``repositories`` file must name ``tfmesos/tfmesos`` exactly.
podman (and a docker with another registry prefix) writes ``localhost/tfmesos/tfmesos`` or
``docker.io/tfmesos/tfmesos`` there, which Mesos does not find, so that file (and manifest.json's
RepoTags) is rewritten while the archive is copied member by member (``tar --delete`` on such an
archive corrupts it), as the engine writes it: a 2 GB image is written to disk once, not twice.

Usage: python3 export.py ENGINE IMAGE DIR     (IMAGE as Mesos will name it, e.g. tfmesos/tfmesos:0.1.0)
"""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import IO


def split_reference(image: str) -> tuple[str, str]:
    """``name[:tag]`` -> (name, tag); a ':' inside a registry host:port is not a tag."""
    name, sep, tag = image.rpartition(":")
    if not sep or "/" in tag:
        return image, "latest"
    return name, tag


def rewrite_repositories(data: bytes, name: str, tag: str) -> bytes:
    """The archive's ``repositories`` file with its one image keyed by ``name`` and ``tag``."""
    repos = json.loads(data)
    layer_ids = {layer for tags in repos.values() for layer in tags.values()}
    if len(layer_ids) != 1:
        raise ValueError(f"repositories names {len(layer_ids)} top layers: expected an archive of one image")
    return json.dumps({name: {tag: layer_ids.pop()}}).encode()


def rewrite_manifest(data: bytes, name: str, tag: str) -> bytes:
    manifest = json.loads(data)
    for entry in manifest:
        entry["RepoTags"] = [f"{name}:{tag}"]
    return json.dumps(manifest).encode()


def rewrite_archive(src: IO[bytes], dest: Path, name: str, tag: str) -> None:
    """Copy the archive read from ``src`` (a stream: read once, in order) to ``dest``, rewritten."""
    edits = {"repositories": rewrite_repositories, "manifest.json": rewrite_manifest}
    with tarfile.open(fileobj=src, mode="r|") as tin, tarfile.open(dest, "w", format=tarfile.GNU_FORMAT) as tout:
        for member in tin:
            edit = edits.get(member.name)
            if edit is None:
                tout.addfile(member, tin.extractfile(member) if member.isfile() else None)
                continue
            data = edit(tin.extractfile(member).read(), name, tag)
            member.size = len(data)
            tout.addfile(member, io.BytesIO(data))


def export(engine: str, image: str, directory: Path) -> Path:
    name, tag = split_reference(image)
    dest = directory / f"{name}:{tag}.tar"
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent) as tmp:
        fmt = ["--format", "docker-archive"] if engine == "podman" else []
        save = subprocess.Popen([engine, "save", *fmt, image], stdout=subprocess.PIPE)  # the archive on stdout
        part = Path(tmp) / "rewritten.tar"
        try:
            assert save.stdout is not None
            rewrite_archive(save.stdout, part, name, tag)
        finally:
            save.stdout.close()  # type: ignore[union-attr]
            code = save.wait()
        if code:
            raise subprocess.CalledProcessError(code, save.args)
        os.replace(part, dest)
    return dest


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    out = export(sys.argv[1], sys.argv[2], Path(sys.argv[3]))
    print(f"image-export: {sys.argv[2]} -> {out} ({out.stat().st_size // 1_000_000} MB)")
