"""Every reference a reader follows resolves: Markdown links and their anchors in README and
docs/, and the textual references that code, tests and benches use instead of issue numbers
(``docs/operations.md, "GDPR erasure"``, ``docs/architecture.md §7``).

Anchors follow the GitHub rule, which mkdocs.yml configures for the site too
(``pymdownx.slugs.slugify``, lower case): lower-cased, punctuation other than ``-`` and
``_`` dropped, each space a hyphen, Unicode letters kept; a repeated heading gets ``-1``,
``-2`` …
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
_LINK = re.compile(r"(?<!!)\[[^\]\n]*\]\(([^)\s]+)\)")
_IMAGE = re.compile(r"!\[[^\]\n]*\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^(```|~~~)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
# docs/NAME.md, "Heading"  |  docs/NAME.md ("Heading")  |  docs/NAME.md §N
_TEXT_REF = re.compile(r'docs/([\w-]+\.md)`?(?:,\s*|\s*\(\s*)["“]([^"”\n]+)["”]')
_SECTION_REF = re.compile(r"docs/([\w-]+\.md)`?,?\s*§(\d+)")


def _prose_lines(text: str) -> Iterable[str]:
    """The lines outside fenced code blocks."""
    fenced = False
    for line in text.splitlines():
        if _FENCE.match(line.strip()):
            fenced = not fenced
            continue
        if not fenced:
            yield line


def headings(path: Path) -> list[str]:
    """The heading texts of a Markdown file, inline code marks removed."""
    found = []
    for line in _prose_lines(path.read_text(encoding="utf-8")):
        m = _HEADING.match(line)
        if m:
            found.append(m.group(2).replace("`", "").strip())
    return found


def slug(text: str) -> str:
    """The GitHub anchor of a heading."""
    kept = "".join(c for c in text.lower() if c.isalnum() or c in " -_")
    return kept.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every anchor of a Markdown file, duplicates numbered as GitHub numbers them."""
    seen: dict[str, int] = {}
    out = set()
    for heading in headings(path):
        base = slug(heading)
        n = seen.get(base, 0)
        out.add(base if n == 0 else f"{base}-{n}")
        seen[base] = n + 1
    return out


def broken_links(md: Path) -> list[str]:
    """The relative links (and anchors) of ``md`` that do not resolve."""
    problems = []
    text = "\n".join(_prose_lines(md.read_text(encoding="utf-8")))
    for target in [*_LINK.findall(text), *_IMAGE.findall(text)]:
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        path_part, _, anchor = target.partition("#")
        dest = (md.parent / path_part).resolve() if path_part else md
        if not dest.exists():
            problems.append(f"{md.name}: {target}: no file {path_part}")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            problems.append(f"{md.name}: {target}: no heading with anchor #{anchor}")
    return problems


def broken_text_refs(source: Path, docs: Path) -> list[str]:
    """Textual references to docs/ sections in ``source`` that name no such file or
    heading. A quoted heading may be the start of a longer one."""
    problems = []
    text = source.read_text(encoding="utf-8", errors="replace")
    for name, quoted in _TEXT_REF.findall(text):
        target = docs / name
        if not target.exists():
            problems.append(f"{source}: docs/{name}: no such file")
            continue
        wanted = quoted.replace("`", "").strip()
        if not any(h.startswith(wanted) for h in headings(target)):
            problems.append(f'{source}: docs/{name}, "{quoted}": no such heading')
    for name, number in _SECTION_REF.findall(text):
        target = docs / name
        if not target.exists() or not any(h.startswith(f"§{number} ")
                                          for h in headings(target)):
            problems.append(f"{source}: docs/{name} §{number}: no such section")
    return problems


def _markdown_files() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def _sources() -> list[Path]:
    roots = ["app", "tests", "bench", "eval", "docs", "ops"]
    files = [REPO / "README.md", REPO / "Makefile"]
    for root in roots:
        files += [p for p in (REPO / root).rglob("*")
                  if p.suffix in {".py", ".md", ".sql", ".js", ".html", ".sh"} and p.is_file()]
    return [f for f in files if f.resolve() != Path(__file__).resolve()]


def test_every_link_and_anchor_in_readme_and_docs_resolves() -> None:
    problems = [p for md in _markdown_files() for p in broken_links(md)]
    assert problems == [], "\n".join(problems)


def test_every_textual_reference_to_a_docs_section_resolves() -> None:
    problems = [p for src in _sources() for p in broken_text_refs(src, REPO / "docs")]
    assert problems == [], "\n".join(problems)


def test_the_checker_finds_a_planted_broken_link_anchor_and_reference(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "ops.md").write_text("# Ops\n\n## GDPR erasure\n\n## GDPR erasure\n\n"
                                 "```\n# not a heading\n```\n", encoding="utf-8")
    page = docs / "guide.md"
    page.write_text("[ok](ops.md#gdpr-erasure) [second](ops.md#gdpr-erasure-1) "
                    "[gone](missing.md) [bad anchor](ops.md#not-a-heading) "
                    "[web](https://example.org/x)\n", encoding="utf-8")
    assert broken_links(page) == [
        "guide.md: missing.md: no file missing.md",
        "guide.md: ops.md#not-a-heading: no heading with anchor #not-a-heading",
    ]
    code = tmp_path / "mod.py"
    code.write_text('# docs/ops.md, "GDPR erasure" and docs/ops.md ("GDPR")\n'
                    '# docs/ops.md, "Backups" and docs/nope.md, "X" and docs/ops.md §3\n',
                    encoding="utf-8")
    assert broken_text_refs(code, docs) == [
        f'{code}: docs/ops.md, "Backups": no such heading',
        f"{code}: docs/nope.md: no such file",
        f"{code}: docs/ops.md §3: no such section",
    ]


def test_anchors_follow_the_github_rule() -> None:
    assert slug("`stichtag index sync` after bounding the tokenizer") == (
        "stichtag-index-sync-after-bounding-the-tokenizer")
    assert slug("Results: CLAPnq at calibrated thresholds (2026-11-30)") == (
        "results-clapnq-at-calibrated-thresholds-2026-11-30")
    assert slug("§7 Answering with gates") == "7-answering-with-gates"
    assert slug("Überschuss › Zins") == "überschuss--zins"
