"""The fetcher unpacks an archive with ``tarfile``'s data filter, and where this Python's ``tarfile``
has none (before 3.11.4: Debian 12's 3.11.2) with the same rules checked member by member."""
from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from localmesos.agent import fetcher


def _tar(path: Path, *members: tarfile.TarInfo) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for member in members:
            data = b"x\n" if member.isfile() else b""
            member.size = len(data)
            tar.addfile(member, io.BytesIO(data) if data else None)
    return path


def _member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "", mode: int = 0o644) -> tarfile.TarInfo:
    member = tarfile.TarInfo(name)
    member.type, member.linkname, member.mode = kind, link, mode
    return member


def _members(archive: Path, dest: Path) -> list[str]:
    with tarfile.open(archive) as tar:
        return [m.name for m in fetcher._data_members(tar, dest)]


def test_plain_files_folders_and_inner_links_pass(tmp_path: Path) -> None:
    archive = _tar(tmp_path / "ok.tgz", _member("b/data.txt"), _member("b/link", tarfile.SYMTYPE, "data.txt"))
    assert _members(archive, tmp_path / "out") == ["b/data.txt", "b/link"]


@pytest.mark.parametrize("member", [
    _member("../evil.py"),
    _member("/abs/evil.py"),
    _member("b/up", tarfile.SYMTYPE, "../../etc/passwd"),
    _member("b/hard", tarfile.LNKTYPE, "../outside"),
    _member("b/dev", tarfile.CHRTYPE),
], ids=["dotdot", "absolute", "symlink-out", "hardlink-out", "device"])
def test_members_leaving_the_sandbox_or_devices_are_refused(tmp_path: Path, member: tarfile.TarInfo) -> None:
    archive = _tar(tmp_path / "bad.tgz", member)
    with pytest.raises(tarfile.TarError, match="refused"):
        _members(archive, tmp_path / "out")


def test_set_uid_bits_are_dropped(tmp_path: Path) -> None:
    archive = _tar(tmp_path / "suid.tgz", _member("run.sh", mode=0o4755))
    with tarfile.open(archive) as tar:
        (member,) = fetcher._data_members(tar, tmp_path)
    assert member.mode == 0o755
