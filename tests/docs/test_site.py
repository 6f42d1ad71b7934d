"""The documentation: README.md for users, docs/ built as a site by MkDocs.

The site builds with --strict, and mkdocs.yml turns a dead link, a missing anchor and a page left out
of the nav into warnings, so each fails the build (shown on a copy with one of each). README stays
short and reaches every page within two clicks: its links, and the docs' index page's.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from markdown.extensions.toc import slugify

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
LINK = re.compile(r"\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} (.+?)\s*$", re.MULTILINE)


def _build(config: Path, site: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config),
                           "--site-dir", str(site)], capture_output=True, text=True, timeout=300)


def test_the_site_builds_strictly_into_a_folder_of_its_own(tmp_path):
    built = _build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert built.returncode == 0, built.stderr[-4000:]
    for page in ("index.html", "options/index.html", "troubleshooting/index.html", "developers/code-map/index.html"):
        assert (tmp_path / "site" / page).is_file(), page
    assert "status-page.png" in (tmp_path / "site" / "status-page" / "index.html").read_text()


def test_a_dead_link_a_missing_anchor_or_a_page_outside_the_nav_fails_the_build(tmp_path):
    for name, change, said in [
        ("dead link", ("index.md", "\n[gone](no-such-page.md)\n"), "no-such-page.md"),
        ("missing anchor", ("index.md", "\n[gone](commands.md#no-such-heading)\n"), "no-such-heading"),
        ("outside the nav", ("orphan.md", "# Orphan\n"), "orphan.md"),
    ]:
        copy = tmp_path / name.replace(" ", "-")
        shutil.copytree(DOCS, copy / "docs")
        shutil.copy2(ROOT / "mkdocs.yml", copy / "mkdocs.yml")
        page, text = change
        with open(copy / "docs" / page, "a") as f:
            f.write(text)
        built = _build(copy / "mkdocs.yml", copy / "site")
        assert built.returncode != 0 and said in built.stderr, (name, built.stderr[-2000:])


def _links(page: Path) -> list[str]:
    return [link for link in LINK.findall(page.read_text()) if "://" not in link]


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.MULTILINE | re.DOTALL)
    return {slugify(re.sub(r"[`*]", "", h), "-") for h in HEADING.findall(text)}


def test_readme_is_short_and_starts_with_the_quick_start():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 250, len(lines)
    head = "\n".join(lines[:30])
    assert "make run" in head and "make test" in head
    assert "options-reference:begin" not in "\n".join(lines)  # the reference lives in docs/options.md


def test_readmes_links_into_the_docs_reach_a_page_and_its_heading():
    for link in _links(ROOT / "README.md"):
        path, _, anchor = link.partition("#")
        target = ROOT / path
        assert target.is_file(), f"README.md links to {link}: no such file"
        if anchor:
            assert anchor in _anchors(target), f"README.md links to {link}: {path} has no such heading"


def test_every_page_is_two_clicks_from_readme():
    first = {(ROOT / link.partition("#")[0]).resolve() for link in _links(ROOT / "README.md")}
    assert (DOCS / "index.md").resolve() in first
    second = {(DOCS / link.partition("#")[0]).resolve() for link in _links(DOCS / "index.md")}
    far = [str(p.relative_to(ROOT)) for p in sorted(DOCS.rglob("*.md")) if p.resolve() not in first | second]
    assert not far, f"{far}: link them from docs/index.md"
