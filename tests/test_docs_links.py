"""Every relative link and #anchor in README.md and docs/*.md points at a file and a heading that exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"`+[^`]*`+")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text lower-cased, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text only
    text = text.replace("`", "").replace("*", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def prose_lines(text: str) -> list[tuple[int, str]]:
    """The lines outside fenced code blocks, numbered from 1."""
    out, fenced = [], False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            out.append((number, line))
    return out


def anchors(path: Path) -> set[str]:
    """Every heading's anchor in a Markdown file (a repeated heading gets -1, -2, ... as on GitHub)."""
    seen: dict[str, int] = {}
    found = set()
    for _, line in prose_lines(path.read_text(encoding="utf-8")):
        match = HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def broken_links(path: Path) -> list[str]:
    """The relative links of a Markdown file whose file or #anchor does not exist, as 'file:line: target'."""
    problems = []
    for number, line in prose_lines(path.read_text(encoding="utf-8")):
        for target in LINK.findall(CODE_SPAN.sub("", line)):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto: ...
                continue
            file_part, _, anchor = target.partition("#")
            linked = (path.parent / file_part).resolve() if file_part else path
            where = f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{number}: {target}"
            if not linked.exists():
                problems.append(f"{where} (no such file)")
            elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
                problems.append(f"{where} (no heading with that anchor)")
    return problems


def documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("path", documents(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(path):
    assert broken_links(path) == []


def test_slug_follows_github():
    assert slug("The learned router (`pipeline.router`)") == "the-learned-router-pipelinerouter"
    assert slug("Ray: one index from many machines (`--ray`)") == "ray-one-index-from-many-machines---ray"
    assert slug("2026-12-06, cb24ebf: issue 34's confirm run") == "2026-12-06-cb24ebf-issue-34s-confirm-run"


def test_a_missing_file_a_missing_anchor_and_code_are_told_apart(tmp_path):
    (tmp_path / "other.md").write_text("# Other\n\n## Same\n\n## Same\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text("# Page\n\n[ok](other.md#same-1) [self](#page) [web](https://example.org/x.md)\n"
                    "[gone](missing.md) [bad anchor](other.md#nowhere) `[code](missing.md)`\n"
                    "```\n[fenced](missing.md)\n```\n", encoding="utf-8")
    problems = broken_links(page)
    assert len(problems) == 2, problems
    assert "missing.md (no such file)" in problems[0] and ":4:" in problems[0]
    assert "other.md#nowhere (no heading with that anchor)" in problems[1]


def test_the_readme_keeps_the_two_commands_and_the_full_suite():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "bash scripts/quickstart.sh" in readme and "bash scripts/test.sh --full" in readme
    assert len(readme.splitlines()) <= 400
    assert len((ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8").splitlines()) <= 300
