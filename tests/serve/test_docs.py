"""The README stays short and leads to the guides: at most 10 KB, the Python client on its
first screen, and every link into docs/ (and every relative link between the guides)
pointing at a file that exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
LINK = re.compile(r"\]\((?P<target>[^)\s]+)\)")
FIRST_SCREEN = 60  # lines


def local_links(doc: Path) -> list[str]:
    """The relative link targets of a Markdown file, without their #anchor."""
    targets = [m["target"] for m in LINK.finditer(doc.read_text())]
    return [
        t.split("#")[0] for t in targets if "://" not in t and not t.startswith(("#", "mailto:"))
    ]


def test_the_readme_is_at_most_10_kb() -> None:
    assert README.stat().st_size <= 10 * 1024, README.stat().st_size


def test_the_readme_links_every_guide_and_each_link_resolves() -> None:
    links = local_links(README)
    guides = {link for link in links if link.startswith("docs/") and link.endswith(".md")}
    assert guides == {f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")}, guides
    for link in links:
        assert (ROOT / link).is_file(), f"README links {link}: no such file"


def test_the_guides_links_resolve() -> None:
    for doc in sorted((ROOT / "docs").glob("*.md")):
        for link in local_links(doc):
            assert (doc.parent / link).is_file(), f"{doc.name} links {link}: no such file"


def anchors(doc: Path) -> set[str]:
    """GitHub's anchors for a Markdown file's headings (outside code blocks)."""
    found, inside = set(), False
    for line in doc.read_text().splitlines():
        if line.startswith("```"):
            inside = not inside
        elif not inside and (m := re.match(r"#+ (.*)", line)):
            slug = re.sub(r"[^\w\- ]", "", m[1].strip().lower()).replace(" ", "-")
            found.add(slug)
    return found


def test_every_link_to_a_heading_finds_it() -> None:
    """The guides link each other's sections (#roles-who-may-do-what): a renamed heading
    would leave such a link dangling."""
    for doc in [README, *sorted((ROOT / "docs").glob("*.md"))]:
        for m in LINK.finditer(doc.read_text()):
            target = m["target"]
            if "://" in target or "#" not in target:
                continue
            path, anchor = target.split("#", 1)
            linked = (doc.parent / path) if path else doc
            assert anchor in anchors(linked), f"{doc.name} links {target}: no such heading"


def test_the_first_screen_has_the_python_client_example_and_runs_it() -> None:
    first = "\n".join(README.read_text().splitlines()[:FIRST_SCREEN])
    block = re.search(r"<!-- runnable -->\n```python\n(.*?)\n```", first, re.S)
    assert block, f"no runnable Python block in the README's first {FIRST_SCREEN} lines"
    code = block[1]
    assert "RedisSMQ(" in code and "send_message(" in code and "receive_message(" in code
    assert len(code.splitlines()) <= 12, code
